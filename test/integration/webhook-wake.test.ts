import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { webhookList, webhookReplay } from '../../src/admin/commands/webhook.js';
import type { Config } from '../../src/shared/config.js';
import { noWorkerMetrics, type WorkerMetrics } from '../../src/workers/worker-metrics.js';
import { pruneLockId, pruneOnce } from '../../src/workers/webhooks/prune.js';
import { wakeApplicationName } from '../../src/workers/webhooks/wake.js';
import { admin } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness } from '../support/webhook-harness.js';

// Issue 50: the dispatcher is woken by the NOTIFY of the transaction that made deliveries due (the
// poll is only the backstop), replaces a lost LISTEN connection, prunes one dispatcher at a time
// and opens an endpoint's breaker on a failure rate. Against the real PostgreSQL; no assertion on
// a duration: where the poll must not be what delivers, it is set to an hour.

const h = webhookHarness({ poolSize: 6, receiver: true, name: 'test-wake' });

const anHour = 3_600_000;

const settings = (extra: Record<string, string> = {}) =>
  h.settings({
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1',
    ...extra,
  });

/** A dispatcher that LISTENs; pollIntervalMs an hour unless given (past the config's bound: set directly). */
const dispatch = (webhooks: Config['webhooks'] = { ...settings(), pollIntervalMs: anHour }, metrics?: WorkerMetrics) =>
  h.dispatch(webhooks, { metrics, listen: true });

/** The backend pid of this database's dispatcher LISTEN connection(s). */
const listenerPids = async () =>
  (
    await h.pool.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [wakeApplicationName],
    )
  ).rows.map((r) => r.pid);

describe('webhook dispatcher woken by NOTIFY', () => {
  it('delivers an event, and a replay, without waiting for the poll', async () => {
    const d = dispatch();
    const owner = await h.newOwner();
    const { path } = await h.newEndpoint(owner);
    await eventually(() => (d.listening() ? true : undefined), 30_000, 'the dispatcher LISTENs');

    const [eventId] = await raiseFieldJobEvents(h.pool, owner, 1, 'WAKE');
    const [hit] = await h.receiver.waitFor(path, 1);
    expect(hit!.headers['webhook-id']).toBe(eventId);

    // A replay inserts no event: its own NOTIFY (webhook_delivery) wakes the dispatcher.
    await eventually(async () =>
      (await h.pool.query("SELECT 1 FROM webhook_deliveries WHERE event_id = $1 AND status = 'Succeeded'", [eventId]))
        .rowCount
        ? true
        : undefined,
    );
    await admin(h.pool, webhookReplay, ['--event', eventId!]);
    const hits = await h.receiver.waitFor(path, 2);
    expect(hits[1]!.headers['webhook-id']).toBe(eventId);
  });

  it('replaces a LISTEN connection that was terminated, counts it, and is woken through the new one', async () => {
    const lost: string[] = [];
    const d = dispatch(undefined, { ...noWorkerMetrics, webhookListenLost: (why) => void lost.push(why) });
    const owner = await h.newOwner();
    const { path } = await h.newEndpoint(owner);
    await eventually(() => (d.listening() ? true : undefined), 30_000, 'the dispatcher LISTENs');
    const [old] = await listenerPids();
    expect(old).toEqual(expect.any(Number));

    await h.pool.query('SELECT pg_terminate_backend($1)', [old]);
    await eventually(
      async () => {
        const pids = await listenerPids();
        return pids.length === 1 && pids[0] !== old && d.listening() ? true : undefined;
      },
      30_000,
      'a new LISTEN connection',
    );
    expect(lost).toHaveLength(1); // webhook_listen_connections_lost_total (the server ended it: error or end)
    expect(['error', 'end']).toContain(lost[0]);

    const [eventId] = await raiseFieldJobEvents(h.pool, owner, 1, 'AFTER-LOSS');
    const [hit] = await h.receiver.waitFor(path, 1);
    expect(hit!.headers['webhook-id']).toBe(eventId);
  });
});

describe('webhook breaker on a failure rate', () => {
  it('opens for an endpoint that fails 4 times in 5, never 5 in a row', async () => {
    // One attempt at a time to the endpoint (max-in-flight 1): outcomes are recorded in the order
    // the receiver counted the requests, so failures in a row never reach WEBHOOK_BREAKER_FAILURES.
    dispatch({
      ...settings({ WEBHOOK_BREAKER_FAILURES: '5', WEBHOOK_BREAKER_FAILURE_RATE_PERCENT: '70' }),
      pollIntervalMs: 50,
      breakerWindow: 10,
    });
    const owner = await h.newOwner();
    const { path, endpointId } = await h.newEndpoint(owner, ['--max-in-flight', '1']);
    h.receiver.behave(path, (n) => (n % 5 === 0 ? { status: 200 } : { status: 500 }));
    await raiseFieldJobEvents(h.pool, owner, 12, 'RATE');

    const endpoint = async () =>
      ((await admin(h.pool, webhookList, ['--client', owner.clientId])).endpoints as any[]).find(
        (e) => e.endpointId === endpointId,
      );
    const opened = await eventually(
      async () => {
        const ep = await endpoint();
        return ep.breaker.state !== 'Closed' ? ep : undefined;
      },
      30_000,
      'the breaker opened',
    );
    expect(opened.breaker.opensInARow).toBeGreaterThanOrEqual(1);
    expect(opened.consecutiveFailures).toBeLessThan(5);
    const { rows } = await h.pool.query<{ outcome: string }>(
      'SELECT outcome FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id',
      [endpointId],
    );
    let run = 0;
    let longest = 0;
    for (const r of rows) {
      run = r.outcome === 'Succeeded' ? 0 : run + 1;
      longest = Math.max(longest, run);
    }
    expect(longest).toBeLessThan(5);
    expect(rows.length).toBeGreaterThanOrEqual(10);
    const failed = rows.slice(-10).filter((r) => r.outcome !== 'Succeeded').length;
    expect(failed).toBeGreaterThanOrEqual(7);
  });
});

describe('pruning events', () => {
  /**
   * n events of a new (disabled) endpoint, each delivery with `attemptsEach` attempt rows. Every
   * event in the database is then made older than the retention: pruning goes in the feed's order
   * and stops at the first event kept, so the earlier tests' events must go too.
   */
  async function oldEvents(n: number, attemptsEach = 0) {
    const owner = await h.newOwner();
    const { endpointId } = await h.newEndpoint(owner);
    const ids = await raiseFieldJobEvents(h.pool, owner, n, 'OLD');
    await h.pool.query("UPDATE webhook_endpoints SET status = 'Disabled', disabled_at = now() WHERE id = $1", [
      endpointId,
    ]);
    await h.pool.query("UPDATE webhook_events SET created_at = now() - interval '30 days'");
    await h.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, tenant_id, event_id, endpoint_id, attempt, outcome, latency_ms, started_at)
       SELECT d.id, d.tenant_id, d.event_id, d.endpoint_id, g, 'HttpError', 1, now()
         FROM webhook_deliveries d, generate_series(1, $2::int) g
        WHERE d.event_id = ANY($1)`,
      [ids, attemptsEach],
    );
    return ids;
  }
  const remaining = async (ids: string[]) =>
    (
      await h.pool.query<{ events: number; deliveries: number; attempts: number }>(
        `SELECT (SELECT count(*)::int FROM webhook_events WHERE id = ANY($1)) AS events,
                (SELECT count(*)::int FROM webhook_deliveries WHERE event_id = ANY($1)) AS deliveries,
                (SELECT count(*)::int FROM webhook_attempts WHERE event_id = ANY($1)) AS attempts`,
        [ids],
      )
    ).rows[0]!;
  const retentionMs = 14 * 24 * 3_600_000;

  it('skips while another dispatcher holds the pruning lock, and prunes in batches once it is free', async () => {
    const ids = await oldEvents(3, 4000); // 12,000 attempts: more than one delete batch (5,000)
    expect((await remaining(ids)).attempts).toBeGreaterThan(10_000);
    const other = new pg.Client({ connectionString: h.db.url });
    await other.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1)', [pruneLockId]);
      expect(await pruneOnce({ pool: h.pool, databaseUrl: h.db.url }, retentionMs)).toBeNull();
      expect((await remaining(ids)).events).toBe(3);
      await other.query('SELECT pg_advisory_unlock($1)', [pruneLockId]);
      expect(await pruneOnce({ pool: h.pool, databaseUrl: h.db.url }, retentionMs)).toBeGreaterThanOrEqual(3);
      expect(await remaining(ids)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    } finally {
      await other.end();
    }
  });

  it('two dispatchers pruning at once do the work once', async () => {
    const ids = await oldEvents(20, 100);
    expect(await remaining(ids)).toEqual({ events: 20, deliveries: 20, attempts: 2000 });
    const results = await Promise.all([
      pruneOnce({ pool: h.pool, databaseUrl: h.db.url }, retentionMs),
      pruneOnce({ pool: h.pool, databaseUrl: h.db.url }, retentionMs),
    ]);
    // One pruned every event; the other found the lock taken (null) or, after it, nothing left (0).
    const worked = results.filter((r) => r !== null && r > 0);
    expect(worked).toHaveLength(1);
    expect(worked[0]).toBeGreaterThanOrEqual(20);
    expect(await remaining(ids)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
  });
});
