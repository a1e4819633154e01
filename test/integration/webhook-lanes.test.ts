import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness } from '../support/webhook-harness.js';

// Issue 50: WEBHOOK_LANE splits the dispatchers by the deliveries they take, so that hanging
// requests never share an event loop with a healthy delivery: an `answering` process takes only
// deliveries to endpoints that answer, a `not-answering` one only the others (new, failing).
// Against the real PostgreSQL. That a lane leaves a delivery alone is checked after the
// dispatcher has looked for due deliveries several times since it was raised (counted), never
// after a sleep.

const h = webhookHarness({ poolSize: 6, receiver: true });

const settings = (lane: Config['webhooks']['lane']) =>
  h.settings({
    WEBHOOK_LANE: lane,
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1',
    WEBHOOK_BREAKER_FAILURES: '1000', // the failing endpoint's retries must go on
    WEBHOOK_BREAKER_FAILURE_RATE_PERCENT: '0',
  });

/** Resolves once every delivery of these events is recorded Succeeded. */
const succeeded = (eventIds: string[]) =>
  eventually(
    async () => {
      const { rows } = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ANY($1) AND status <> 'Succeeded'",
        [eventIds],
      );
      return rows[0]!.n === 0 ? true : undefined;
    },
    30_000,
    'the deliveries recorded as succeeded',
  );

/** A dispatcher of the lane on a pool that counts its looks for due deliveries; stopped after the test. */
function laneDispatcher(lane: Config['webhooks']['lane']) {
  const counted = h.countingClaims(`test-lane-${lane}`);
  const d = startDispatcher({
    webhooks: settings(lane),
    logger: createLogger('silent', `test-lane-${lane}`),
    pool: counted.pool,
    databaseUrl: h.db.url,
  });
  h.stopAfterTest(() => d.stop());
  /** Resolves once it has looked for due deliveries `n` more times. */
  const looksMore = async (n: number) => {
    const from = counted.claims();
    await eventually(() => (counted.claims() >= from + n ? true : undefined), 30_000, `${lane}: ${n} more looks`);
  };
  return { d, looksMore };
}

describe('webhook dispatcher lanes', () => {
  it('an answering process takes only deliveries to endpoints that answer, a not-answering one only the others', async () => {
    const owner = await h.newOwner();
    const ok = await h.newEndpoint(owner);
    const failing = await h.newEndpoint(owner);

    // New endpoints are not known to answer: the not-answering lane tries them.
    const other = laneDispatcher('not-answering');
    await succeeded(await raiseFieldJobEvents(h.pool, owner, 1, 'FIRST'));
    expect(other.d.counts().claimed).toBe(2);

    // Both answered: their next deliveries are the answering lane's, which is not running yet.
    const second = await raiseFieldJobEvents(h.pool, owner, 1, 'SECOND');
    await other.looksMore(5);
    expect(h.receiver.received(ok.path)).toHaveLength(1);
    expect(h.receiver.received(failing.path)).toHaveLength(1);

    const answering = laneDispatcher('answering');
    await succeeded(second);
    expect(answering.d.counts().claimed).toBe(2);
    expect(other.d.counts().claimed).toBe(2);

    // One endpoint fails: it is not answering from then on, and its retries are the other lane's.
    h.receiver.behave(failing.path, () => ({ status: 500 }));
    await raiseFieldJobEvents(h.pool, owner, 1, 'THIRD');
    await h.receiver.waitFor(ok.path, 3);
    await h.receiver.waitFor(failing.path, 4); // its first attempt (answering's), then a retry
    await eventually(() => (other.d.counts().claimed >= 3 ? true : undefined), 30_000, 'a retry by not-answering');
    expect(answering.d.counts().claimed).toBe(4);
  });
});
