import { describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { admin, createClientWithKey } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { spawnWorkers } from '../support/processes.js';
import { verifiesWith } from '../support/webhook-receiver.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness } from '../support/webhook-harness.js';

// The dispatcher as its own process (WORKERS=webhooks), SIGKILLed while the receiver holds its
// requests open, then restarted: every event is delivered in the end, the interrupted ones again
// under the same webhook-id; none lost. Then SIGTERM mid-attempt: the attempt finishes first.

const h = webhookHarness({ poolSize: 4, demo: true, receiver: true });

const env = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_TIMEOUT_MS: '2000', // lease = timeout + 5 s
  WEBHOOK_POLL_INTERVAL_MS: '100',
  WEBHOOK_CONCURRENCY: '8',
  // Every slot on one endpoint of one tenant: eight attempts held open at once.
  WEBHOOK_TENANT_SHARE_PERCENT: '100',
  WEBHOOK_ENDPOINT_CONCURRENCY: '8',
  WEBHOOK_RESERVE_PERCENT: '0', // none held back for endpoints that answer: this one never has yet
  WEBHOOK_RETRY_SCHEDULE: '0.2,0.5,1,2,4',
};
const count = 20;

const raise = (clientId: string, n: number) =>
  raiseFieldJobEvents(h.pool, { tenantId: h.demo.tenantId, clientId }, n, 'CRASH');

const statuses = async () =>
  Object.fromEntries(
    (
      await h.pool.query('SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status')
    ).rows.map((r) => [r.status, r.n]),
  );

describe('webhook dispatcher crash safety', () => {
  it('loses nothing when killed with SIGKILL mid-delivery and restarted', async () => {
    const config = testConfig(h.db.url);
    const { clientId } = await createClientWithKey(h.pool, h.demo.tenantId, '');
    const endpoint = await admin(h.pool, webhookCreate, [
      '--client',
      clientId,
      '--url',
      h.receiver.url('/crash'),
      '--events',
      'all',
    ]);
    let holding = true;
    h.receiver.behave('/crash', () => (holding ? 'hold' : { status: 200 }));
    const ids = await raise(clientId, count);

    const first = spawnWorkers(config, 'webhooks', env);
    await first.running();
    await eventually(() => (h.receiver.heldCount() === 8 ? true : undefined), 30_000, 'eight requests held open');
    expect(await first.kill('SIGKILL')).toBeNull(); // killed by the signal, mid-delivery
    const interrupted = h.receiver.received('/crash').map((r) => r.headers['webhook-id']!);
    expect(interrupted).toHaveLength(8);
    expect(await statuses()).toEqual({ Delivering: 8, Pending: count - 8 });

    holding = false;
    const second = spawnWorkers(config, 'webhooks', env);
    await second.running();
    await eventually(
      async () => ((await statuses()).Succeeded === count ? true : undefined),
      60_000,
      'every delivery Succeeded',
    );

    const got = h.receiver.received('/crash');
    const byId = new Map<string, number>();
    for (const r of got) byId.set(r.headers['webhook-id']!, (byId.get(r.headers['webhook-id']!) ?? 0) + 1);
    expect([...byId.keys()].sort()).toEqual([...ids].sort()); // nothing lost
    for (const id of ids) expect(byId.get(id), id).toBe(interrupted.includes(id) ? 2 : 1);
    for (const r of got) expect(verifiesWith(endpoint.secret, r)).toBe(true);
    for (const id of interrupted) {
      const bodies = got.filter((r) => r.headers['webhook-id'] === id).map((r) => r.body);
      expect(bodies[0]).toBe(bodies[1]); // the same event, byte for byte
    }
    // The interrupted attempt left no record (its process died); the retry is attempt 2.
    const { rows } = await h.pool.query(
      `SELECT d.event_id, d.attempt_count, array_agg(a.attempt ORDER BY a.attempt) AS recorded
         FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id GROUP BY d.id`,
    );
    for (const r of rows) expect(r.recorded).toEqual(interrupted.includes(r.event_id) ? [2] : [1]);

    // SIGTERM while an attempt is in flight: it is finished and recorded before the process exits.
    h.receiver.behave('/crash', () => ({ status: 200, delayMs: 1000 }));
    const [last] = await raise(clientId, 1);
    await h.receiver.waitFor('/crash', 1, (r) => r.headers['webhook-id'] === last);
    expect(await second.kill('SIGTERM')).toBe(0);
    const { rows: lastRows } = await h.pool.query(
      `SELECT d.status, count(a.id)::int AS attempts FROM webhook_deliveries d
         LEFT JOIN webhook_attempts a ON a.delivery_id = d.id WHERE d.event_id = $1 GROUP BY d.id`,
      [last],
    );
    expect(lastRows).toEqual([{ status: 'Succeeded', attempts: 1 }]);
  }, 180_000);
});
