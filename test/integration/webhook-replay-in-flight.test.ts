import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { createLogger } from '../../src/shared/logger.js';
import { findEvent, replayEvent } from '../../src/shared/webhooks/endpoint-deliveries.js';
import { startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { admin, createClientWithKey } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness } from '../support/webhook-harness.js';

// Issue 50: replaying a delivery whose attempt is in flight cleared its lease, so the claim
// stopped counting the open attempt and sent the delivery again beside it: with a replay every
// second, an endpoint with maxInFlight 1 had 6 requests open at once. A replay now waits for the
// open attempt: the receiver never has two requests open, and the delivery goes once more after.

const h = webhookHarness({ poolSize: 4, demo: true, receiver: true });

describe('replaying a delivery in flight', () => {
  it('never has two requests open at a maxInFlight 1 endpoint, and sends the event once more afterwards', async () => {
    const webhooks = h.settings({
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '30000', // the held request stays open for the whole test
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_TENANT_SHARE_PERCENT: '100',
    });
    const { clientId } = await createClientWithKey(h.pool, h.demo.tenantId, '');
    const path = `/replay/${randomUUID()}`;
    const endpoint = await admin(h.pool, webhookCreate, [
      '--client',
      clientId,
      '--url',
      h.receiver.url(path),
      '--events',
      'all',
      '--max-in-flight',
      '1',
    ]);
    h.receiver.behave(path, (n) => (n === 1 ? 'hold' : { status: 200 }));
    const [eventId] = await raiseFieldJobEvents(h.pool, { tenantId: h.demo.tenantId, clientId }, 1, 'REPLAY');
    const event = (await findEvent(h.pool, eventId!))!;

    // Two dispatchers, each woken by the replay's NOTIFY and polling every 50 ms.
    const dispatchers = ['a', 'b'].map((name) => {
      const counted = h.countingClaims(`test-replay-${name}`);
      const dispatcher = startDispatcher({
        webhooks,
        logger: createLogger('silent', `test-replay-${name}`),
        pool: counted.pool,
        databaseUrl: h.db.url,
      });
      return { dispatcher, claims: counted.claims };
    });
    const claims = () => dispatchers.reduce((sum, d) => sum + d.claims(), 0);
    try {
      await h.receiver.waitFor(path, 1);
      for (let i = 0; i < 5; i++) {
        expect(await replayEvent(h.pool, event, endpoint.endpointId)).toHaveLength(1);
        const before = claims();
        // Both dispatchers had their chance to take the replayed delivery (or one took it).
        await eventually(
          () => (claims() >= before + 4 || h.receiver.received(path).length > 1 ? true : undefined),
          scaled(30_000),
          'four claims after the replay',
        );
        expect(h.receiver.received(path)).toHaveLength(1); // not sent beside its open attempt
      }
      const { rows } = await h.pool.query(
        'SELECT status, replay_requested, attempt_count FROM webhook_deliveries WHERE event_id = $1',
        [eventId],
      );
      expect(rows).toEqual([{ status: 'Delivering', replay_requested: true, attempt_count: 1 }]);

      h.receiver.release(); // the open attempt succeeds; the replays asked for one more
      await h.receiver.waitFor(path, 2);
      await eventually(
        async () => {
          const { rows } = await h.pool.query('SELECT status FROM webhook_deliveries WHERE event_id = $1', [eventId]);
          return rows[0].status === 'Succeeded' ? true : undefined;
        },
        scaled(30_000),
        'the replayed delivery Succeeded',
      );
    } finally {
      h.receiver.release();
      await Promise.all(dispatchers.map((d) => d.dispatcher.stop()));
    }
    expect(h.receiver.received(path).map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId]);
    const { rows } = await h.pool.query(
      `SELECT d.status, d.replay_requested, d.round_attempts, array_agg(a.outcome ORDER BY a.attempt) AS outcomes
         FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.event_id = $1 GROUP BY d.id`,
      [eventId],
    );
    expect(rows).toEqual([
      { status: 'Succeeded', replay_requested: false, round_attempts: 1, outcomes: ['Succeeded', 'Succeeded'] },
    ]);
  }, 120_000);
  it('a replay during the last attempt of the schedule starts a new round instead of the delivery giving up', async () => {
    const webhooks = h.settings({
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '30000',
      WEBHOOK_RETRY_SCHEDULE: '0.2', // two attempts a round
    });
    const { clientId } = await createClientWithKey(h.pool, h.demo.tenantId, '');
    const path = `/last/${randomUUID()}`;
    const endpoint = await admin(h.pool, webhookCreate, [
      '--client',
      clientId,
      '--url',
      h.receiver.url(path),
      '--events',
      'all',
    ]);
    h.receiver.behave(path, (n) => (n === 1 ? { status: 500 } : n === 2 ? 'hold' : { status: 200 }));
    const [eventId] = await raiseFieldJobEvents(h.pool, { tenantId: h.demo.tenantId, clientId }, 1, 'LAST');
    const counted = h.countingClaims('test-replay-last');
    const dispatcher = startDispatcher({
      webhooks,
      logger: createLogger('silent', 'test-replay-last'),
      pool: counted.pool,
    });
    try {
      await h.receiver.waitFor(path, 2); // the round's last attempt, held open
      await replayEvent(h.pool, (await findEvent(h.pool, eventId!))!, endpoint.endpointId);
      h.receiver.release(500); // it fails: without the replay, the delivery would give up here
      await eventually(
        async () => {
          const { rows } = await h.pool.query('SELECT status FROM webhook_deliveries WHERE event_id = $1', [eventId]);
          return rows[0].status === 'Succeeded' ? true : undefined;
        },
        scaled(30_000),
        'the replayed delivery Succeeded',
      );
    } finally {
      h.receiver.release();
      await dispatcher.stop();
    }
    const { rows } = await h.pool.query(
      `SELECT d.round_attempts, ep.status AS endpoint_status, array_agg(a.outcome ORDER BY a.attempt) AS outcomes
         FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
         JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.event_id = $1 GROUP BY d.id, ep.status`,
      [eventId],
    );
    expect(rows).toEqual([
      { round_attempts: 1, endpoint_status: 'Active', outcomes: ['HttpError', 'HttpError', 'Succeeded'] },
    ]);
  }, 120_000);
});
