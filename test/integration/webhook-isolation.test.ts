import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate, webhookList } from '../../src/admin/commands/webhook.js';
import type { Config } from '../../src/shared/config.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import type { BreakerTransition, WorkerMetrics } from '../../src/workers/worker-metrics.js';
import { noWorkerMetrics } from '../../src/workers/worker-metrics.js';
import { startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { admin, createClientWithKey, createDemo } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// One tenant's slow endpoints must not delay another tenant's deliveries (issue 39): the claim
// gives each endpoint its share in flight, each tenant its share of a dispatcher's slots, and an
// endpoint that keeps failing is backed off as a whole by its breaker. Every assertion is on an
// order of events or a count, never on a duration: requests are held open by the receiver until
// the test has looked.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';

let db: TestDatabase;
let pool: Pool;
let receiver: WebhookReceiver;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 6, 'test');
  receiver = await startWebhookReceiver();
});

// Each test's dispatchers stop with it: their settings are the test's own.
afterEach(async () => {
  receiver.release();
  for (const stop of stops.splice(0).reverse()) await stop();
});

afterAll(async () => {
  await receiver?.close();
  await pool?.end();
  await db?.drop();
});

const settings = (extra: Record<string, string> = {}): Config['webhooks'] =>
  testConfig(db.url, {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_MS: '60000', // held requests are answered by the test, not timed out
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2',
    ...extra,
  }).webhooks;

function dispatch(webhooks: Config['webhooks'], metrics: WorkerMetrics = noWorkerMetrics) {
  const d = startDispatcher({ webhooks, logger: createLogger('silent', 'test-isolation'), pool, metrics });
  stops.push(() => d.stop());
  return d;
}

type Owner = { tenantId: string; clientId: string };

async function newTenant(): Promise<Owner> {
  const { tenantId } = await createDemo(pool);
  const { clientId } = await createClientWithKey(pool, tenantId, '');
  return { tenantId, clientId };
}

/** A new endpoint of the owner on its own receiver path; its path and id. */
async function newEndpoint(owner: Owner, extra: string[] = []) {
  const path = `/hook/${randomUUID()}`;
  const created = await admin(pool, webhookCreate, [
    '--client',
    owner.clientId,
    '--url',
    receiver.url(path),
    '--events',
    'all',
    ...extra,
  ]);
  return { path, endpointId: created.endpointId as string };
}

const endpointOf = async (owner: Owner, endpointId: string) =>
  ((await admin(pool, webhookList, ['--client', owner.clientId])).endpoints as any[]).find(
    (e) => e.endpointId === endpointId,
  );

describe('webhook isolation', () => {
  it("delivers a tenant's event while another tenant's endpoints hold every request it was sent", async () => {
    // 8 slots, a tenant's share 50 %: the noisy tenant holds at most 4, the rest stay free.
    dispatch(settings({ WEBHOOK_CONCURRENCY: '8', WEBHOOK_TENANT_SHARE_PERCENT: '50' }));
    const noisy = await newTenant();
    const slow: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { path } = await newEndpoint(noisy);
      receiver.behave(path, () => 'hold');
      slow.push(path);
    }
    await raiseFieldJobEvents(pool, noisy, 2, 'NOISY'); // 12 deliveries, every one held open
    const heldBySlow = () => slow.reduce((n, p) => n + receiver.heldCount(p), 0);
    await eventually(() => (heldBySlow() === 4 ? true : undefined), 30_000, "the noisy tenant's share held open");

    const healthy = await newTenant();
    const { path } = await newEndpoint(healthy);
    const [eventId] = await raiseFieldJobEvents(pool, healthy, 1, 'HEALTHY');
    const [hit] = await receiver.waitFor(path, 1);
    expect(hit!.headers['webhook-id']).toBe(eventId);
    // Nothing of the noisy tenant's was answered meanwhile: the healthy event did not wait for it.
    expect(heldBySlow()).toBe(4);
    const noisyAttempts = await pool.query(`SELECT count(*)::int AS n FROM webhook_attempts WHERE tenant_id = $1`, [
      noisy.tenantId,
    ]);
    expect(noisyAttempts.rows[0].n).toBe(0);
    receiver.release();
  });

  it("sends an endpoint at most its maxInFlight at once, across dispatchers, and another's beside it", async () => {
    const webhooks = settings({ WEBHOOK_CONCURRENCY: '16', WEBHOOK_TENANT_SHARE_PERCENT: '100' });
    dispatch(webhooks);
    dispatch(webhooks); // a second dispatcher: the endpoint's share holds across both
    const owner = await newTenant();
    const capped = await newEndpoint(owner, ['--max-in-flight', '2']);
    receiver.behave(capped.path, () => 'hold');
    await raiseFieldJobEvents(pool, owner, 6, 'CAPPED');
    await eventually(() => (receiver.heldCount(capped.path) === 2 ? true : undefined), 30_000, 'two held');

    // Later events of the client go to its other endpoint while the capped one is full; the
    // dispatchers have polled many times since, and the capped endpoint still got only its two.
    const other = await newEndpoint(owner);
    await raiseFieldJobEvents(pool, owner, 3, 'OTHER');
    await receiver.waitFor(other.path, 3);
    expect(receiver.received(capped.path)).toHaveLength(2);
    expect((await endpointOf(owner, capped.endpointId)).maxInFlight).toBe(2);

    receiver.behave(capped.path, () => ({ status: 200 }));
    receiver.release();
    await receiver.waitFor(capped.path, 6 + 3); // the 6 first events and the 3 later ones
  });

  it('opens the breaker of an endpoint that keeps failing, holds its deliveries, probes and closes', async () => {
    const transitions: BreakerTransition[] = [];
    dispatch(
      settings({
        WEBHOOK_BREAKER_FAILURES: '3',
        WEBHOOK_BREAKER_OPEN_MS: '300',
        WEBHOOK_BREAKER_OPEN_MAX_MS: '600',
        WEBHOOK_ENDPOINT_CONCURRENCY: '1', // one attempt at a time: the failures come in order
      }),
      { ...noWorkerMetrics, webhookBreaker: (t) => void transitions.push(t) },
    );
    const owner = await newTenant();
    const e = await newEndpoint(owner);
    let failing = true;
    receiver.behave(e.path, () => (failing ? { status: 500, body: 'down' } : { status: 200 }));
    const events = await raiseFieldJobEvents(pool, owner, 8, 'BREAKER');

    const opened = await eventually(async () => {
      const ep = await endpointOf(owner, e.endpointId);
      return ep.breaker.state !== 'Closed' ? ep : undefined;
    });
    expect(opened.breaker.openedAt).toEqual(expect.any(String));
    expect(opened.breaker.opensInARow).toBeGreaterThanOrEqual(1);
    expect(opened.consecutiveFailures).toBeGreaterThanOrEqual(3);
    // Probes fail too: the breaker opens again, once per probe, one request each.
    await eventually(() => (transitions.filter((t) => t === 'opened').length >= 3 ? true : undefined));
    const requestsWhileFailing = receiver.received(e.path).length;
    const opens = transitions.filter((t) => t === 'opened').length;
    expect(requestsWhileFailing).toBeLessThanOrEqual(3 + opens); // 3 to open it, then one probe per reopening
    const { rows } = await pool.query(
      `SELECT count(*) FILTER (WHERE round_attempts = 0)::int AS untried FROM webhook_deliveries WHERE endpoint_id = $1`,
      [e.endpointId],
    );
    expect(rows[0].untried).toBeGreaterThan(0); // the rest waited without using up their retries

    failing = false;
    await eventually(async () =>
      (await endpointOf(owner, e.endpointId)).breaker.state === 'Closed' ? true : undefined,
    );
    const ids = new Set(
      (await receiver.waitFor(e.path, events.length, (r) => r.headers['webhook-id'] !== undefined)).map(
        (r) => r.headers['webhook-id'],
      ),
    );
    await eventually(() => {
      const delivered = new Set(receiver.received(e.path).map((r) => r.headers['webhook-id']));
      return events.every((id) => delivered.has(id)) ? true : undefined;
    });
    expect(ids.size).toBeGreaterThan(0);
    expect(transitions).toContain('closed');
    const closed = await endpointOf(owner, e.endpointId);
    expect(closed).toMatchObject({
      status: 'Active',
      consecutiveFailures: 0,
      breaker: { state: 'Closed', openedAt: null, nextProbeAt: null, opensInARow: 0 },
    });
  });
});
