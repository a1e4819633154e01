import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import { createEndpoint } from '../../src/shared/webhooks/endpoints.js';
import type { AttemptResult } from '../../src/workers/webhooks/post.js';
import { recordOutcomes, type Claimed, type RecordSettings } from '../../src/workers/webhooks/record.js';
import { eventually } from '../support/kafka.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';
import { webhookHarness, type Owner } from '../support/webhook-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Issue 50: the statement that records a success begins its endpoint's next due delivery, which
// the dispatcher sends in the same slot, without a claim (sql.ts recordSuccesses). Against the
// real PostgreSQL and a real HTTP receiver. Claims are counted by the dispatcher's counts(), not
// inferred from time; no assertion on a duration.

// No shared receiver: each test starts its own (receiverFor), so its peakOpen is that test's alone.
const h = webhookHarness({ poolSize: 6, name: 'test-chain' });

const anHour = 3_600_000;

const settings = (extra: Record<string, string> = {}) =>
  h.settings({
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1',
    WEBHOOK_BREAKER_FAILURES: '1000', // failures here must not open the breaker (it would stop the attempts)
    WEBHOOK_BREAKER_FAILURE_RATE_PERCENT: '0',
    ...extra,
  });

/** A dispatcher woken by NOTIFY; pollIntervalMs an hour unless given (set directly, past the config's bound). */
const dispatch = (webhooks: Config['webhooks'] = { ...settings(), pollIntervalMs: anHour }) =>
  h.dispatch(webhooks, { listen: true });

async function receiverFor(): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver();
  h.stopAfterTest(async () => {
    r.release();
    await r.close();
  });
  return r;
}

const newEndpoint = (receiver: WebhookReceiver, owner: Owner, maxInFlight: number) =>
  h.newEndpoint(owner, ['--max-in-flight', String(maxInFlight)], receiver);

const succeeded = async (eventIds: string[]) =>
  Number(
    (
      await h.pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = ANY($1) AND status = 'Succeeded'",
        [eventIds],
      )
    ).rows[0]!.n,
  );

describe('webhook deliveries chained after a success', () => {
  it('sends an endpoint its due deliveries one after another in the slot, once each, in order, with few claims', async () => {
    const receiver = await receiverFor();
    const d = dispatch();
    await eventually(() => (d.listening() ? true : undefined), 30_000, 'the dispatcher LISTENs');
    const owner = await h.newOwner();
    const { path } = await newEndpoint(receiver, owner, 1);
    const n = 40;
    const before = d.counts();

    const eventIds = await raiseFieldJobEvents(h.pool, owner, n, 'CHAIN'); // one transaction: all due at once
    await eventually(async () => ((await succeeded(eventIds)) === n ? true : undefined), 60_000, 'all Succeeded');

    // Each once, in the order they were raised (max in flight 1: one after another), never two open at once.
    expect(receiver.received(path).map((r) => r.headers['webhook-id'])).toEqual(eventIds);
    expect(receiver.peakOpen()).toBe(1);
    const { rows } = await h.pool.query<{ event_id: string; attempt: number; outcome: string }>(
      `SELECT a.event_id, a.attempt, a.outcome FROM webhook_attempts a WHERE a.event_id = ANY($1) ORDER BY a.started_at`,
      [eventIds],
    );
    expect(rows.map((r) => [r.event_id, r.attempt, r.outcome])).toEqual(eventIds.map((id) => [id, 1, 'Succeeded']));
    const { rows: counted } = await h.pool.query<{ attempt_count: number; round_attempts: number }>(
      'SELECT DISTINCT attempt_count, round_attempts FROM webhook_deliveries WHERE event_id = ANY($1)',
      [eventIds],
    );
    expect(counted).toEqual([{ attempt_count: 1, round_attempts: 1 }]);

    // Each delivery begun exactly once: by a claim or by the recording of the one before it.
    const after = d.counts();
    const claimed = after.claimed - before.claimed;
    const chained = after.chained - before.chained;
    expect(claimed + chained).toBe(n);
    expect(chained).toBeGreaterThanOrEqual(n - 2);
    expect(after.claims - before.claims).toBeLessThanOrEqual(n / 4); // far fewer claims than deliveries
    expect(d.slotsHeld().peak).toBeLessThanOrEqual(settings().concurrency);
  });

  it('two dispatchers: chained deliveries arrive once each and the endpoint never has more than its max in flight', async () => {
    const receiver = await receiverFor();
    const a = dispatch();
    const b = dispatch();
    await eventually(() => (a.listening() && b.listening() ? true : undefined), 30_000, 'both LISTEN');
    const owner = await h.newOwner();
    const { path } = await newEndpoint(receiver, owner, 2);
    receiver.behave(path, () => ({ status: 200, delayMs: 5 })); // two open at once, now and then
    const n = 60;
    const eventIds = await raiseFieldJobEvents(h.pool, owner, n, 'TWO');
    await eventually(async () => ((await succeeded(eventIds)) === n ? true : undefined), 60_000, 'all Succeeded');
    const got = receiver.received(path).map((r) => r.headers['webhook-id']);
    expect([...got].sort()).toEqual([...eventIds].sort()); // each once
    expect(receiver.peakOpen()).toBeLessThanOrEqual(2);
    const chained = a.counts().chained + b.counts().chained;
    expect(a.counts().claimed + b.counts().claimed + chained).toBe(n);
    expect(chained).toBeGreaterThan(n / 2);
  });

  it('does not chain after failures, nor after slow successes: those slots go back to the claim', async () => {
    const receiver = await receiverFor();
    // slow from 50 ms; the poll brings the retries (due by time, no NOTIFY)
    const d = dispatch({ ...settings({ WEBHOOK_SLOW_ATTEMPT_MS: '50' }), pollIntervalMs: 50 });
    const owner = await h.newOwner();
    const failing = await newEndpoint(receiver, owner, 1);
    const slow = await newEndpoint(receiver, owner, 1);
    receiver.behave(failing.path, () => ({ status: 500, body: 'no' }));
    receiver.behave(slow.path, () => ({ status: 200, delayMs: 100 }));
    const before = d.counts();
    const failingIds = await raiseFieldJobEvents(h.pool, owner, 3, 'FAIL'); // both endpoints get each event
    await receiver.waitFor(failing.path, 9); // three attempts of each at least
    await eventually(async () => ((await succeeded(failingIds)) === 3 ? true : undefined), 30_000, 'slow ones done');
    expect(receiver.received(slow.path)).toHaveLength(3);
    const after = d.counts();
    expect(after.chained - before.chained).toBe(0);
    expect(after.claimed - before.claimed).toBeGreaterThanOrEqual(9 + 3);
  });
});

describe('the chaining statement (recordSuccesses)', () => {
  const ok: AttemptResult = { outcome: 'Succeeded', statusCode: 200, latencyMs: 5, error: null, responseSnippet: 'ok' };
  const chainSettings = (inHand: string[] = []): RecordSettings => ({
    retryScheduleMs: [1000],
    breaker: {
      failures: 5,
      rate: { percent: 70, window: 10 },
      open: { baseMs: 1000, maxMs: 8000, attempts: Infinity },
    },
    chain: { leaseMs: 60_000, endpointConcurrency: 4, endpointConcurrencyMax: 16, inHand: () => inHand },
  });

  /** An endpoint (max in flight 2) with `n` deliveries, the first `delivering` of them Delivering under a live lease. */
  async function setUp(n: number, delivering: number) {
    const owner = await h.newOwner();
    const { endpointId } = await createEndpoint(h.pool, {
      ...owner,
      url: `https://example.com/${randomUUID()}`,
      eventTypes: '*',
    });
    await h.pool.query('UPDATE webhook_endpoints SET max_in_flight = 2 WHERE id = $1', [endpointId]);
    await raiseFieldJobEvents(h.pool, owner, n, 'SQL');
    const { rows } = await h.pool.query<Claimed>(
      `SELECT d.id, d.tenant_id, d.event_id, d.endpoint_id, d.attempt_count, d.round_attempts, d.lease_token,
              e.type, e.body, ep.url, ep.secret, NULL AS previous_secret
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
        WHERE d.endpoint_id = $1 ORDER BY d.id`,
      [endpointId],
    );
    const started: Claimed[] = [];
    for (const d of rows.slice(0, delivering)) {
      const { rows: begun } = await h.pool.query<{
        lease_token: string;
        attempt_count: number;
        round_attempts: number;
      }>(
        `UPDATE webhook_deliveries SET status = 'Delivering', lease_token = gen_random_uuid(),
                lease_until = now() + interval '1 minute', attempt_count = 1, round_attempts = 1
          WHERE id = $1 RETURNING lease_token, attempt_count, round_attempts`,
        [d.id],
      );
      started.push({ ...d, ...begun[0]! });
    }
    return { endpointId, deliveries: rows, started };
  }

  const outcome = (d: Claimed, chain = true) => ({ delivery: d, startedAt: new Date(), result: ok, chain });
  const status = async (ids: string[]) =>
    (
      await h.pool.query<{ id: string; status: string; attempt_count: number; lease: boolean }>(
        `SELECT id, status, attempt_count, lease_until > now() AS lease FROM webhook_deliveries WHERE id = ANY($1::bigint[]) ORDER BY id`,
        [ids],
      )
    ).rows.map((r) => [r.status, r.attempt_count, r.lease]);

  it('begins the next due delivery in place of the success, within the endpoint max in flight as counted in PostgreSQL', async () => {
    // three in flight on an endpoint of max 2 (another dispatcher's view raced, say): no room after one success
    const { deliveries, started } = await setUp(6, 3);
    const [first] = await recordOutcomes(h.pool, chainSettings(), [outcome(started[0]!)]);
    expect(first).toEqual({ status: 'fulfilled', value: { outcome: 'succeeded', breakerClosed: false } });

    // two in flight now, one of them succeeds: the next due (the 4th) is begun as a claim and a beginning would
    const [second] = await recordOutcomes(h.pool, chainSettings(), [outcome(started[1]!)]);
    const next = (second as PromiseFulfilledResult<any>).value.next as Claimed;
    expect(next).toMatchObject({
      id: deliveries[3]!.id,
      event_id: deliveries[3]!.event_id,
      endpoint_id: deliveries[3]!.endpoint_id,
      tenant_id: deliveries[3]!.tenant_id,
      attempt_count: 1,
      round_attempts: 1,
      type: 'field_job.created',
      body: deliveries[3]!.body,
      url: deliveries[3]!.url,
      secret: deliveries[3]!.secret,
      previous_secret: null,
    });
    expect(next.lease_token).toEqual(expect.any(String));
    expect(await status(deliveries.map((d) => d.id))).toEqual([
      ['Succeeded', 1, null],
      ['Succeeded', 1, null],
      ['Delivering', 1, true],
      ['Delivering', 1, true], // chained
      ['Pending', 0, null],
      ['Pending', 0, null],
    ]);

    // in hand at this dispatcher (the 5th): skipped, the 6th is begun instead; not asked for: none
    const [third, fourth] = await recordOutcomes(h.pool, chainSettings([deliveries[4]!.id]), [
      outcome(started[2]!),
      outcome(next, false),
    ]);
    expect((third as PromiseFulfilledResult<any>).value.next).toMatchObject({ id: deliveries[5]!.id });
    expect((fourth as PromiseFulfilledResult<any>).value.next).toBeUndefined();
    expect(await status(deliveries.map((d) => d.id))).toEqual([
      ['Succeeded', 1, null],
      ['Succeeded', 1, null],
      ['Succeeded', 1, null],
      ['Succeeded', 1, null],
      ['Pending', 0, null],
      ['Delivering', 1, true],
    ]);
  });

  it('begins nothing that is not due, of a disabled endpoint, in place of a lapsed lease, or without chain settings', async () => {
    const { endpointId, deliveries, started } = await setUp(4, 2);
    await h.pool.query(`UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [
      deliveries[2]!.id,
    ]);
    const [notDue] = await recordOutcomes(h.pool, chainSettings(), [outcome(started[0]!)]);
    expect((notDue as PromiseFulfilledResult<any>).value.next).toMatchObject({ id: deliveries[3]!.id });

    const other = await setUp(3, 2);
    const { chain: _, ...noChain } = chainSettings();
    const [plain] = await recordOutcomes(h.pool, noChain, [outcome(other.started[0]!)]);
    expect((plain as PromiseFulfilledResult<any>).value.next).toBeUndefined();
    await h.pool.query(
      `UPDATE webhook_endpoints SET status = 'Disabled', disabled_reason = 'test', disabled_at = now() WHERE id = $1`,
      [other.endpointId],
    );
    const [disabled] = await recordOutcomes(h.pool, chainSettings(), [outcome(other.started[1]!)]);
    expect((disabled as PromiseFulfilledResult<any>).value).toEqual({ outcome: 'succeeded', breakerClosed: false });
    expect(await status(other.deliveries.map((d) => d.id))).toEqual([
      ['Succeeded', 1, null],
      ['Succeeded', 1, null],
      ['Pending', 0, null],
    ]);
    expect(endpointId).not.toBe(other.endpointId);

    // in place of a delivery whose lease lapsed (not counted by claims meanwhile): none
    const lapsed = await setUp(2, 1);
    await h.pool.query(`UPDATE webhook_deliveries SET lease_until = now() - interval '1 second' WHERE id = $1`, [
      lapsed.started[0]!.id,
    ]);
    const [afterLapse] = await recordOutcomes(h.pool, chainSettings(), [outcome(lapsed.started[0]!)]);
    expect((afterLapse as PromiseFulfilledResult<any>).value).toEqual({ outcome: 'succeeded', breakerClosed: false });
    expect(await status(lapsed.deliveries.map((d) => d.id))).toEqual([
      ['Succeeded', 1, null],
      ['Pending', 0, null],
    ]);
  });
});
