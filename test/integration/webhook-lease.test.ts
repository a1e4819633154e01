import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { createLogger } from '../../src/shared/logger.js';
import { leaseMs, startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { claimDeliveries } from '../../src/workers/webhooks/sql.js';
import { admin, createClientWithKey } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { watchedPool } from '../support/watched-pool.js';
import { scaled } from '../support/time-scale.js';
import { capturedLogger, raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness } from '../support/webhook-harness.js';

// A lease must cover the attempt, not the wait before it. Dispatcher A's claim answer is held back
// (as a starved process, a long GC pause or a slow network would hold it) until A's lease has
// expired and dispatcher B has taken those deliveries over and delivered them. When A finally
// gets its rows it must not send them: nothing crashed, so every event arrives exactly once.
// Waits are on conditions (B's deliveries Succeeded), never on durations, so load cannot fake it.

const h = webhookHarness({ poolSize: 4, demo: true, receiver: true });

const events = 12;

const raise = (clientId: string, n: number) =>
  raiseFieldJobEvents(h.pool, { tenantId: h.demo.tenantId, clientId }, n, 'LEASE');

describe('webhook leases', () => {
  it('a dispatcher that gets to its attempt only after its lease was taken over sends nothing', async () => {
    const webhooks = h.settings({
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '2000', // lease = timeout + 5 s; generous so load does not cause timeouts
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_RETRY_SCHEDULE: '0.2,0.5,1',
    });
    const { clientId } = await createClientWithKey(h.pool, h.demo.tenantId, '');
    const path = `/hook/${randomUUID()}`;
    await admin(h.pool, webhookCreate, ['--client', clientId, '--url', h.receiver.url(path), '--events', 'all']);
    const ids = await raise(clientId, events);

    // A's first claim that returns rows is handed to A only once B has delivered those rows. The
    // claim runs in a transaction (it waits for other dispatchers' claims on an advisory lock), so
    // A is held back after its COMMIT: its claim is in PostgreSQL, its answer not yet in A.
    let heldBack: string[] = [];
    let claimedRows: string[] = [];
    const latePool = watchedPool(h.db.url, 'test-late', async (text, result) => {
      if (text === claimDeliveries) claimedRows = result.rows.map((r: { id: string }) => r.id);
      else if (text === 'COMMIT' && claimedRows.length > 0 && heldBack.length === 0) {
        heldBack = claimedRows;
        await eventually(
          async () => {
            const { rows } = await h.pool.query(
              `SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = ANY($1::bigint[]) AND status = 'Succeeded'`,
              [heldBack],
            );
            return rows[0].n === heldBack.length ? true : undefined;
          },
          60_000,
          'dispatcher B to deliver the claims A holds',
        );
      }
    });
    h.endAfterAll(latePool);

    const a = capturedLogger('test-webhooks-a');
    const late = startDispatcher({ webhooks, logger: a.logger, pool: latePool });
    await eventually(() => (heldBack.length > 0 ? true : undefined), 30_000, "A's first claim");
    const b = startDispatcher({
      webhooks,
      logger: createLogger('silent', 'test-webhooks-b'),
      pool: h.extraPool('test-b'),
    });
    try {
      await h.receiver.waitFor(path, events, () => true, 60_000);
    } finally {
      await late.stop(); // waits for the held-back claim and whatever A then does with it
      await b.stop();
    }

    const got = h.receiver.received(path).map((r) => r.headers['webhook-id']!);
    const perId = new Map<string, number>();
    for (const id of got) perId.set(id, (perId.get(id) ?? 0) + 1);
    console.log(
      `lease test: ${events} events, A held back ${heldBack.length} claims; receiver got ${got.length} requests ` +
        `for ${perId.size} webhook-ids; A logged: ${a.lines.map((l) => l.msg).join(' | ') || '(nothing)'}`,
    );
    expect(heldBack.length).toBeGreaterThan(0);
    expect([...perId.keys()].sort()).toEqual([...ids].sort());
    expect(got).toHaveLength(events); // exactly once each
    const { rows } = await h.pool.query(
      `SELECT d.id, d.status, count(a.*) FILTER (WHERE a.outcome = 'Succeeded')::int AS succeeded
         FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.event_id = ANY($1) GROUP BY d.id, d.status`,
      [ids],
    );
    expect(rows).toHaveLength(events);
    for (const r of rows) expect(r).toMatchObject({ status: 'Succeeded', succeeded: 1 });
  });
  // Issue 50: a success whose recording stalls past the lease (here the test's own transaction
  // holds a lock that recording an attempt needs first; in production a pool wait, a lock, a
  // PostgreSQL blip) must not be sent again by another dispatcher. Before the fix the lease ran
  // out under the stalled recording and the other dispatcher claimed and sent it again.
  it('a success whose recording stalls past the lease is not sent again by a second dispatcher', async () => {
    const webhooks = h.settings({
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '1000', // lease = 6 s
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_TENANT_SHARE_PERCENT: '100', // every slot may go to this one endpoint
      WEBHOOK_RETRY_SCHEDULE: '0.2,0.5,1',
    });
    const n = 4;
    const { clientId } = await createClientWithKey(h.pool, h.demo.tenantId, '');
    const path = `/stall/${randomUUID()}`;
    await admin(h.pool, webhookCreate, ['--client', clientId, '--url', h.receiver.url(path), '--events', 'all']);

    // Recording an attempt inserts its row first: a SHARE lock on the table holds every recording
    // (claims, beginnings and lease renewals touch only webhook_deliveries and go on).
    const blocker = await h.pool.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE webhook_attempts IN SHARE MODE');
    const ids = await raise(clientId, n);
    const a = h.countingClaims('test-stall-a');
    const b = h.countingClaims('test-stall-b');
    const quiet = (name: string) => createLogger('silent', name);
    const dispatchers = [
      startDispatcher({ webhooks, logger: quiet('test-stall-a'), pool: a.pool }),
      startDispatcher({ webhooks, logger: quiet('test-stall-b'), pool: b.pool }),
    ];
    const claims = () => a.claims() + b.claims();
    try {
      await h.receiver.waitFor(path, n, () => true, 60_000); // all answered 200, none recorded
      // No lease set so far can outlast this moment (each began before its request arrived).
      const { rows: deadline } = await h.pool.query(`SELECT now() + $1 * interval '1 millisecond' AS at`, [
        leaseMs(webhooks),
      ]);
      await eventually(
        async () =>
          (await h.pool.query('SELECT now() > $1 AS past', [deadline[0].at])).rows[0].past ? true : undefined,
        scaled(60_000),
        'the leases taken before the stall to have run out',
      );
      const before = claims();
      await eventually(
        // (or a request sent again: then every slot may be held by stalled recordings, no claim comes)
        () => (claims() >= before + 5 || h.receiver.received(path).length > n ? true : undefined),
        scaled(30_000),
        'five more claims after that',
      );
      const { rows } = await h.pool.query(
        `SELECT count(*) FILTER (WHERE status = 'Delivering' AND lease_until > now())::int AS held
           FROM webhook_deliveries WHERE event_id = ANY($1)`,
        [ids],
      );
      expect(h.receiver.received(path)).toHaveLength(n); // nobody sent them again
      expect(rows[0].held).toBe(n); // renewed under the stalled recordings
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
      await eventually(
        async () => {
          const { rows } = await h.pool.query(
            `SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ANY($1) AND status = 'Succeeded'`,
            [ids],
          );
          return rows[0].n === n ? true : undefined;
        },
        scaled(60_000),
        'every stalled outcome recorded',
      ).finally(() => Promise.all(dispatchers.map((d) => d.stop())));
    }

    const got = h.receiver.received(path).map((r) => r.headers['webhook-id']!);
    expect([...got].sort()).toEqual([...ids].sort()); // each exactly once
    const { rows } = await h.pool.query(
      `SELECT d.attempt_count, array_agg(a.outcome ORDER BY a.attempt) AS outcomes
         FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.event_id = ANY($1) GROUP BY d.id`,
      [ids],
    );
    expect(rows).toHaveLength(n);
    for (const r of rows) expect(r).toEqual({ attempt_count: 1, outcomes: ['Succeeded'] });
  }, 180_000);
});
