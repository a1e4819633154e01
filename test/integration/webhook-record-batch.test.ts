import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createEndpoint } from '../../src/shared/webhooks/endpoints.js';
import type { AttemptResult } from '../../src/workers/webhooks/post.js';
import { recordOutcomes, type Claimed, type Outcome, type RecordSettings } from '../../src/workers/webhooks/record.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createClientWithKey, createDemo, type Demo } from '../support/fixtures.js';
import { raiseFieldJobEvents } from '../support/webhook-events.js';

// The dispatcher records the outcomes of attempts that finish together in one statement
// (successes) or one transaction (the rest), issue 50. Recorded together they must leave the
// deliveries, the attempts and the endpoints exactly as recording each alone did, lease checks
// included. The same outcomes go to two copies of the same endpoints: one copy recorded in one
// call, the other one outcome per call, in the same order; then the rows are compared.

const settings: RecordSettings = {
  retryScheduleMs: [5000], // one retry, then the delivery gives up
  breaker: { failures: 3, rate: { percent: 70, window: 10 }, open: { baseMs: 1000, maxMs: 8000, attempts: Infinity } },
};

let db: TestDatabase;
let pool: Pool;
let demo: Demo;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 4, 'test');
  demo = await createDemo(pool);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const ok: AttemptResult = { outcome: 'Succeeded', statusCode: 200, latencyMs: 5, error: null, responseSnippet: 'ok' };
const failed: AttemptResult = {
  outcome: 'HttpError',
  statusCode: 500,
  latencyMs: 7,
  error: 'HTTP 500',
  responseSnippet: 'no',
};

/** A client with endpoints a (its breaker open, probe due), b and c, and `events` deliveries to each, all begun by "this dispatcher". */
async function copy(events: number) {
  const { clientId } = await createClientWithKey(pool, demo.tenantId, '');
  const owner = { tenantId: demo.tenantId, clientId };
  const ids: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };
  for (const name of ['a', 'b', 'c'] as const)
    ids[name] = (
      await createEndpoint(pool, { ...owner, url: `https://example.com/${name}`, eventTypes: '*' })
    ).endpointId;
  await pool.query(
    `UPDATE webhook_endpoints SET breaker_opened_at = now() - interval '1 minute', breaker_probe_at = now() - interval '1 second',
            breaker_trips = 1, consecutive_failures = 3, recent_failures_mask = 7, recent_attempts = 3 WHERE id = $1`,
    [ids.a],
  );
  await raiseFieldJobEvents(pool, owner, events, 'BATCH');
  const { rows } = await pool.query<Claimed & { endpoint_name: string }>(
    `UPDATE webhook_deliveries d SET status = 'Delivering', lease_token = gen_random_uuid(),
            lease_until = now() + interval '1 minute', attempt_count = 1, round_attempts = 1
       FROM webhook_events e, webhook_endpoints ep
      WHERE e.id = d.event_id AND ep.id = d.endpoint_id AND ep.client_id = $1
     RETURNING d.id, d.tenant_id, d.event_id, d.endpoint_id, d.attempt_count, d.round_attempts, d.lease_token,
               e.type, e.body, ep.url, ep.secret, NULL AS previous_secret, substr(ep.url, 21) AS endpoint_name`,
    [clientId],
  );
  const of = (name: string) => rows.filter((r) => r.endpoint_name === name).sort((x, y) => Number(x.id) - Number(y.id));
  return { ids, a: of('a'), b: of('b'), c: of('c') };
}

type Copy = Awaited<ReturnType<typeof copy>>;

/** The outcomes, in the order they finished; one of c's with a lease token that is not ours any more. */
function outcomes(c: Copy): Outcome[] {
  const at = (d: Claimed, result: AttemptResult, token = d.lease_token): Outcome => ({
    delivery: { ...d, lease_token: token },
    startedAt: new Date('2026-12-05T00:00:00Z'),
    result,
  });
  return [
    at(c.a[0]!, ok), // the probe: closes a's breaker
    at(c.b[0]!, failed),
    at(c.a[1]!, ok),
    at(c.b[1]!, failed),
    at(c.c[0]!, failed),
    at(c.b[2]!, failed), // b's third failure in a row: opens its breaker
    at(c.a[2]!, failed),
    at(c.c[1]!, ok, randomUUID()), // taken over meanwhile: nothing of it is recorded
    at(c.b[3]!, ok), // a late success: closes b's again
    at(c.c[2]!, { ...failed, outcome: 'Timeout', statusCode: null }),
  ];
}

async function state(c: Copy) {
  const endpoints = await pool.query(
    `SELECT substr(url, 21) AS name, status, consecutive_failures, breaker_trips, recent_failures_mask, recent_attempts,
            breaker_opened_at IS NOT NULL AS open, breaker_probe_at IS NOT NULL AS probe_set,
            coalesce(last_success_at >= coalesce(last_failure_at, '-infinity'), false) AS answering
       FROM webhook_endpoints WHERE id = ANY($1) ORDER BY url`,
    [Object.values(c.ids)],
  );
  const deliveries = await pool.query(
    `SELECT substr(ep.url, 21) AS name, d.status, d.lease_token IS NULL AS lease_ended, d.last_error,
            (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS attempts
       FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
      WHERE d.endpoint_id = ANY($1) ORDER BY ep.url, d.id`,
    [Object.values(c.ids)],
  );
  return { endpoints: endpoints.rows, deliveries: deliveries.rows };
}

describe('webhook outcomes recorded together', () => {
  it('leave deliveries, attempts and endpoints as recording them one by one does', async () => {
    const together = await copy(4);
    const alone = await copy(4);

    const batch = await recordOutcomes(pool, settings, outcomes(together));
    const single = [];
    for (const o of outcomes(alone)) single.push(...(await recordOutcomes(pool, settings, [o])));

    const values = (rs: PromiseSettledResult<unknown>[]) =>
      rs.map((r) => (r.status === 'fulfilled' ? r.value : `rejected: ${String(r.reason)}`));
    // retryInMs is drawn with jitter: compared as present or not
    const comparable = (v: unknown) =>
      JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'retryInMs' ? typeof x : x))) as unknown;
    expect(comparable(values(batch))).toEqual(comparable(values(single)));
    expect(values(batch).map((r) => (r as { outcome: string }).outcome)).toEqual([
      'succeeded',
      'retry_scheduled',
      'succeeded',
      'retry_scheduled',
      'retry_scheduled',
      'retry_scheduled',
      'retry_scheduled',
      'lease_lost',
      'succeeded',
      'retry_scheduled',
    ]);
    expect(values(batch)[0]).toEqual({ outcome: 'succeeded', breakerClosed: true });
    expect(values(batch)[2]).toEqual({ outcome: 'succeeded', breakerClosed: false });
    expect(values(batch)[5]).toMatchObject({ breakerOpened: { trips: 1, waitMs: 1000 } });
    expect(values(batch)[8]).toEqual({ outcome: 'succeeded', breakerClosed: true });

    const a = await state(together);
    const b = await state(alone);
    expect(a).toEqual(b);
    expect(a.endpoints.map((e) => [e.name, e.consecutive_failures, e.open, e.answering])).toEqual([
      ['a', 1, false, false],
      ['b', 0, false, true],
      ['c', 2, false, false],
    ]);
    // every attempt made is listed (as before batching, the one whose lease was lost too); that
    // delivery is left as the dispatcher that took it over has it, as are those not attempted
    expect(a.deliveries.filter((d) => d.attempts === 1)).toHaveLength(10);
    expect(a.deliveries.filter((d) => !d.lease_ended)).toEqual([
      { name: 'a', status: 'Delivering', lease_ended: false, last_error: null, attempts: 0 },
      { name: 'c', status: 'Delivering', lease_ended: false, last_error: null, attempts: 1 },
      { name: 'c', status: 'Delivering', lease_ended: false, last_error: null, attempts: 0 },
    ]);
  });

  it('give up at the end of the schedule and disable the endpoint once, with the first reason', async () => {
    const together = await copy(3);
    const second = (d: Claimed): Outcome => ({
      delivery: { ...d, attempt_count: 2, round_attempts: 2 },
      startedAt: new Date(),
      result: failed,
    });
    const recorded = await recordOutcomes(pool, settings, together.c.map(second));
    expect(recorded.map((r) => (r.status === 'fulfilled' ? r.value.outcome : 'rejected'))).toEqual([
      'gave_up',
      'gave_up',
      'gave_up',
    ]);
    const disabled = recorded.map((r) =>
      r.status === 'fulfilled' && r.value.outcome === 'gave_up' ? r.value.disabled : null,
    );
    expect(disabled[0]).toMatchObject({ reason: expect.stringContaining(together.c[0]!.event_id) });
    expect(disabled.slice(1)).toEqual([null, null]);
    const { endpoints, deliveries } = await state(together);
    expect(endpoints.find((e) => e.name === 'c')).toMatchObject({
      status: 'Disabled',
      consecutive_failures: 3,
      open: true,
    });
    expect(deliveries.filter((d) => d.name === 'c').map((d) => d.status)).toEqual(['Failed', 'Failed', 'Failed']);
  });
});
