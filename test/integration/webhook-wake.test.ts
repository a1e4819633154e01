import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate, webhookList, webhookReplay } from '../../src/admin/commands/webhook.js';
import type { Config } from '../../src/shared/config.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { noWorkerMetrics } from '../../src/workers/worker-metrics.js';
import { pruneLockId, pruneOnce } from '../../src/workers/webhooks/prune.js';
import { wakeApplicationName } from '../../src/workers/webhooks/wake.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { admin, createClientWithKey, createDemo } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Issue 50: the dispatcher is woken by the NOTIFY of the transaction that made deliveries due (the
// poll is only the backstop), replaces a lost LISTEN connection, prunes one dispatcher at a time
// and opens an endpoint's breaker on a failure rate. Against the real PostgreSQL; no assertion on
// a duration: where the poll must not be what delivers, it is set to an hour.

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

afterEach(async () => {
  receiver.release();
  for (const stop of stops.splice(0).reverse()) await stop();
});

afterAll(async () => {
  await receiver?.close();
  await pool?.end();
  await db?.drop();
});

const anHour = 3_600_000;

const settings = (extra: Record<string, string> = {}): Config['webhooks'] =>
  testConfig(db.url, {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1',
    ...extra,
  }).webhooks;

/** A dispatcher that LISTENs; pollIntervalMs an hour unless given (past the config's bound: set directly). */
function dispatch(webhooks: Config['webhooks'] = { ...settings(), pollIntervalMs: anHour }, metrics = noWorkerMetrics) {
  const d = startDispatcher({
    webhooks,
    logger: createLogger('silent', 'test-wake'),
    pool,
    databaseUrl: db.url,
    metrics,
  });
  stops.push(() => d.stop());
  return d;
}

type Owner = { tenantId: string; clientId: string };

async function newOwner(): Promise<Owner> {
  const { tenantId } = await createDemo(pool);
  const { clientId } = await createClientWithKey(pool, tenantId, '');
  return { tenantId, clientId };
}

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

/** The backend pid of this database's dispatcher LISTEN connection(s). */
const listenerPids = async () =>
  (
    await pool.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
      [wakeApplicationName],
    )
  ).rows.map((r) => r.pid);

describe('webhook dispatcher woken by NOTIFY', () => {
  it('delivers an event, and a replay, without waiting for the poll', async () => {
    const d = dispatch();
    const owner = await newOwner();
    const { path } = await newEndpoint(owner);
    await eventually(() => (d.listening() ? true : undefined), 30_000, 'the dispatcher LISTENs');

    const [eventId] = await raiseFieldJobEvents(pool, owner, 1, 'WAKE');
    const [hit] = await receiver.waitFor(path, 1);
    expect(hit!.headers['webhook-id']).toBe(eventId);

    // A replay inserts no event: its own NOTIFY (webhook_delivery) wakes the dispatcher.
    await eventually(async () =>
      (await pool.query("SELECT 1 FROM webhook_deliveries WHERE event_id = $1 AND status = 'Succeeded'", [eventId]))
        .rowCount
        ? true
        : undefined,
    );
    await admin(pool, webhookReplay, ['--event', eventId!]);
    const hits = await receiver.waitFor(path, 2);
    expect(hits[1]!.headers['webhook-id']).toBe(eventId);
  });

  it('replaces a LISTEN connection that was terminated, counts it, and is woken through the new one', async () => {
    const lost: string[] = [];
    const d = dispatch(undefined, { ...noWorkerMetrics, webhookListenLost: (why) => void lost.push(why) });
    const owner = await newOwner();
    const { path } = await newEndpoint(owner);
    await eventually(() => (d.listening() ? true : undefined), 30_000, 'the dispatcher LISTENs');
    const [old] = await listenerPids();
    expect(old).toEqual(expect.any(Number));

    await pool.query('SELECT pg_terminate_backend($1)', [old]);
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

    const [eventId] = await raiseFieldJobEvents(pool, owner, 1, 'AFTER-LOSS');
    const [hit] = await receiver.waitFor(path, 1);
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
    const owner = await newOwner();
    const { path, endpointId } = await newEndpoint(owner, ['--max-in-flight', '1']);
    receiver.behave(path, (n) => (n % 5 === 0 ? { status: 200 } : { status: 500 }));
    await raiseFieldJobEvents(pool, owner, 12, 'RATE');

    const endpoint = async () =>
      ((await admin(pool, webhookList, ['--client', owner.clientId])).endpoints as any[]).find(
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
    const { rows } = await pool.query<{ outcome: string }>(
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
    const owner = await newOwner();
    const { endpointId } = await newEndpoint(owner);
    const ids = await raiseFieldJobEvents(pool, owner, n, 'OLD');
    await pool.query("UPDATE webhook_endpoints SET status = 'Disabled', disabled_at = now() WHERE id = $1", [
      endpointId,
    ]);
    await pool.query("UPDATE webhook_events SET created_at = now() - interval '30 days'");
    await pool.query(
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
      await pool.query<{ events: number; deliveries: number; attempts: number }>(
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
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1)', [pruneLockId]);
      expect(await pruneOnce({ pool, databaseUrl: db.url }, retentionMs)).toBeNull();
      expect((await remaining(ids)).events).toBe(3);
      await other.query('SELECT pg_advisory_unlock($1)', [pruneLockId]);
      expect(await pruneOnce({ pool, databaseUrl: db.url }, retentionMs)).toBeGreaterThanOrEqual(3);
      expect(await remaining(ids)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    } finally {
      await other.end();
    }
  });

  it('two dispatchers pruning at once do the work once', async () => {
    const ids = await oldEvents(20, 100);
    expect(await remaining(ids)).toEqual({ events: 20, deliveries: 20, attempts: 2000 });
    const results = await Promise.all([
      pruneOnce({ pool, databaseUrl: db.url }, retentionMs),
      pruneOnce({ pool, databaseUrl: db.url }, retentionMs),
    ]);
    // One pruned every event; the other found the lock taken (null) or, after it, nothing left (0).
    const worked = results.filter((r) => r !== null && r > 0);
    expect(worked).toHaveLength(1);
    expect(worked[0]).toBeGreaterThanOrEqual(20);
    expect(await remaining(ids)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
  });
});
