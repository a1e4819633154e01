import { describe, expect, it } from 'vitest';
import { webhookList } from '../../src/admin/commands/webhook.js';
import type { BreakerTransition } from '../../src/workers/worker-metrics.js';
import { noWorkerMetrics } from '../../src/workers/worker-metrics.js';
import { admin } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness, type Owner } from '../support/webhook-harness.js';

// One tenant's slow endpoints must not delay another tenant's deliveries (issue 39): the claim
// gives each endpoint its share in flight, each tenant its share of a dispatcher's slots, and an
// endpoint that keeps failing is backed off as a whole by its breaker. Every assertion is on an
// order of events or a count, never on a duration: requests are held open by the receiver until
// the test has looked.

const h = webhookHarness({ poolSize: 6, receiver: true, name: 'test-isolation' });

const settings = (extra: Record<string, string> = {}) =>
  h.settings({
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_MS: '60000', // held requests are answered by the test, not timed out
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2',
    ...extra,
  });

const endpointOf = async (owner: Owner, endpointId: string) =>
  ((await admin(h.pool, webhookList, ['--client', owner.clientId])).endpoints as any[]).find(
    (e) => e.endpointId === endpointId,
  );

describe('webhook isolation', () => {
  it("delivers a tenant's event while another tenant's endpoints hold every request it was sent", async () => {
    // 8 slots, a tenant's share 50 %: the noisy tenant holds at most 4, the rest stay free.
    h.dispatch(settings({ WEBHOOK_CONCURRENCY: '8', WEBHOOK_TENANT_SHARE_PERCENT: '50' }));
    const noisy = await h.newOwner();
    const slow: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { path } = await h.newEndpoint(noisy);
      h.receiver.behave(path, () => 'hold');
      slow.push(path);
    }
    await raiseFieldJobEvents(h.pool, noisy, 2, 'NOISY'); // 12 deliveries, every one held open
    const heldBySlow = () => slow.reduce((n, p) => n + h.receiver.heldCount(p), 0);
    await eventually(() => (heldBySlow() === 4 ? true : undefined), 30_000, "the noisy tenant's share held open");

    const healthy = await h.newOwner();
    const { path } = await h.newEndpoint(healthy);
    const [eventId] = await raiseFieldJobEvents(h.pool, healthy, 1, 'HEALTHY');
    const [hit] = await h.receiver.waitFor(path, 1);
    expect(hit!.headers['webhook-id']).toBe(eventId);
    // Nothing of the noisy tenant's was answered meanwhile: the healthy event did not wait for it.
    expect(heldBySlow()).toBe(4);
    const noisyAttempts = await h.pool.query(`SELECT count(*)::int AS n FROM webhook_attempts WHERE tenant_id = $1`, [
      noisy.tenantId,
    ]);
    expect(noisyAttempts.rows[0].n).toBe(0);
    h.receiver.release();
  });

  it("sends an endpoint at most its maxInFlight at once, across dispatchers, and another's beside it", async () => {
    const webhooks = settings({ WEBHOOK_CONCURRENCY: '16', WEBHOOK_TENANT_SHARE_PERCENT: '100' });
    h.dispatch(webhooks);
    h.dispatch(webhooks); // a second dispatcher: the endpoint's share holds across both
    const owner = await h.newOwner();
    const capped = await h.newEndpoint(owner, ['--max-in-flight', '2']);
    h.receiver.behave(capped.path, () => 'hold');
    await raiseFieldJobEvents(h.pool, owner, 6, 'CAPPED');
    await eventually(() => (h.receiver.heldCount(capped.path) === 2 ? true : undefined), 30_000, 'two held');

    // Later events of the client go to its other endpoint while the capped one is full; the
    // dispatchers have polled many times since, and the capped endpoint still got only its two.
    const other = await h.newEndpoint(owner);
    await raiseFieldJobEvents(h.pool, owner, 3, 'OTHER');
    await h.receiver.waitFor(other.path, 3);
    expect(h.receiver.received(capped.path)).toHaveLength(2);
    expect((await endpointOf(owner, capped.endpointId)).maxInFlight).toBe(2);

    h.receiver.behave(capped.path, () => ({ status: 200 }));
    h.receiver.release();
    await h.receiver.waitFor(capped.path, 6 + 3); // the 6 first events and the 3 later ones
  });

  it('opens the breaker of an endpoint that keeps failing, holds its deliveries, probes and closes', async () => {
    const transitions: BreakerTransition[] = [];
    h.dispatch(
      settings({
        WEBHOOK_BREAKER_FAILURES: '3',
        WEBHOOK_BREAKER_OPEN_MS: '300',
        WEBHOOK_BREAKER_OPEN_MAX_MS: '600',
        WEBHOOK_ENDPOINT_CONCURRENCY: '1', // one attempt at a time: the failures come in order
      }),
      { metrics: { ...noWorkerMetrics, webhookBreaker: (t) => void transitions.push(t) } },
    );
    const owner = await h.newOwner();
    const e = await h.newEndpoint(owner);
    let failing = true;
    h.receiver.behave(e.path, () => (failing ? { status: 500, body: 'down' } : { status: 200 }));
    const events = await raiseFieldJobEvents(h.pool, owner, 8, 'BREAKER');

    const opened = await eventually(async () => {
      const ep = await endpointOf(owner, e.endpointId);
      return ep.breaker.state !== 'Closed' ? ep : undefined;
    });
    expect(opened.breaker.openedAt).toEqual(expect.any(String));
    expect(opened.breaker.opensInARow).toBeGreaterThanOrEqual(1);
    expect(opened.consecutiveFailures).toBeGreaterThanOrEqual(3);
    // Probes fail too: the breaker opens again, once per probe, one request each.
    await eventually(() => (transitions.filter((t) => t === 'opened').length >= 3 ? true : undefined));
    const requestsWhileFailing = h.receiver.received(e.path).length;
    const opens = transitions.filter((t) => t === 'opened').length;
    expect(requestsWhileFailing).toBeLessThanOrEqual(3 + opens); // 3 to open it, then one probe per reopening
    const { rows } = await h.pool.query(
      `SELECT count(*) FILTER (WHERE round_attempts = 0)::int AS untried FROM webhook_deliveries WHERE endpoint_id = $1`,
      [e.endpointId],
    );
    expect(rows[0].untried).toBeGreaterThan(0); // the rest waited without using up their retries

    failing = false;
    await eventually(async () =>
      (await endpointOf(owner, e.endpointId)).breaker.state === 'Closed' ? true : undefined,
    );
    const ids = new Set(
      (await h.receiver.waitFor(e.path, events.length, (r) => r.headers['webhook-id'] !== undefined)).map(
        (r) => r.headers['webhook-id'],
      ),
    );
    await eventually(() => {
      const delivered = new Set(h.receiver.received(e.path).map((r) => r.headers['webhook-id']));
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
