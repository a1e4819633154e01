import type { Config } from '../../shared/config.js';
import { isPostgresUnavailable } from '../../shared/db/errors.js';
import { inTransaction, type Pool } from '../../shared/db/pool.js';
import { listedDelayMs } from '../../shared/retry.js';
import type { WebhookOutcome } from '../worker-metrics.js';
import { afterOutcomes, type BreakerSettings, type EndpointHealth, type OutcomeEffect } from './breaker.js';
import type { AttemptResult } from './post.js';
import {
  disableEndpoints,
  insertAttempts,
  lockEndpointsHealth,
  prepared,
  recordSuccesses,
  settleDeliveries,
  updateEndpointsHealth,
} from './sql.js';

// What attempts' outcomes change, many attempts in one transaction (the dispatcher hands in what
// finished meanwhile: batch.ts): the attempts' rows, the deliveries (Succeeded, Pending again
// later, or Failed) and their endpoints (failures, the breaker, Disabled). Every change to a
// delivery requires this dispatcher's lease token: if another dispatcher took the delivery over
// meanwhile, nothing of it is changed (lease_lost), its endpoint's health included. A replay asked
// for while the attempt was in flight queues the delivery again whatever the outcome (reported as
// succeeded, or as a retry due now); the endpoint's health still counts the outcome. An
// endpoint's outcomes in one batch count as if recorded one after another, in the order they
// finished (breaker.ts afterOutcomes). The statement that records successes may also begin their
// endpoints' next due deliveries, one per success that asks for it (chaining, sql.ts
// recordSuccesses): returned with the success, for the dispatcher to send in the same slot.

/** A delivery as the claim returns it; its counts as beginAttempts left them once it began (attempt.ts). */
export type Claimed = {
  id: string;
  tenant_id: string;
  event_id: string;
  endpoint_id: string;
  /** Attempts begun, this one included: its number. */
  attempt_count: number;
  /** Attempts begun since it was (re)queued, this one included: picks the next wait of the retry schedule. */
  round_attempts: number;
  lease_token: string;
  type: string;
  body: string;
  url: string;
  secret: string;
  previous_secret: string | null;
};

/** What was recorded: the outcome, the breaker's change, and more for some outcomes. */
export type Recorded =
  | {
      outcome: 'succeeded';
      breakerClosed: boolean;
      /** Its endpoint's next due delivery, begun by the same statement, for the same slot (recordSuccesses). */
      next?: Claimed;
    }
  | { outcome: 'retry_scheduled'; breakerOpened: BreakerOpened | null; retryInMs: number }
  | { outcome: 'gave_up'; breakerOpened: BreakerOpened | null; disabled: { client_id: string; reason: string } | null }
  | { outcome: Extract<WebhookOutcome, 'lease_lost'> };

export type BreakerOpened = { waitMs: number; trips: number };

export type RecordSettings = {
  retryScheduleMs: Config['webhooks']['retryScheduleMs'];
  breaker: BreakerSettings;
  /** Without it nothing is chained (recordSuccesses). */
  chain?: ChainSettings;
};

/** What chaining needs to begin a delivery as the claim would (sql.ts recordSuccesses). */
export type ChainSettings = {
  leaseMs: number;
  /** An endpoint's max in flight where it sets none, and the most it may set (the claim's). */
  endpointConcurrency: number;
  endpointConcurrencyMax: number;
  /** Deliveries the dispatcher has in hand now: never chained. */
  inHand: () => string[];
};

/**
 * An attempt made, to be recorded. chain: when it succeeded, begin its endpoint's next due
 * delivery in the same statement, for the attempt's slot (the dispatcher asks only for fast
 * successes); only when the whole batch of its endpoint succeeded.
 */
export type Outcome = { delivery: Claimed; startedAt: Date; result: AttemptResult; chain?: boolean };

const leaseLost = { outcome: 'lease_lost' } as const;
const errorText = (result: AttemptResult) => result.error?.slice(0, 1000) ?? null;

/**
 * Records outcomes; answers each (in their order). Those of endpoints whose attempts here all
 * succeeded in one statement (recordSuccesses), the others in one transaction (breaker.ts decides
 * what each failure does to its endpoint).
 * When that fails for another reason than PostgreSQL not serving (which fails them all: each is
 * tried again by its attempt), each outcome is recorded in a transaction of its own, one after
 * another, so one that cannot be recorded (its delivery deleted meanwhile, say) fails alone.
 */
export async function recordOutcomes(
  pool: Pool,
  settings: RecordSettings,
  outcomes: Outcome[],
): Promise<PromiseSettledResult<Recorded>[]> {
  // An endpoint with a failure among these has all its outcomes recorded in the transaction, in
  // the order they finished (a success after a failure closes the breaker it opened, not before).
  const failing = new Set(outcomes.filter((o) => o.result.outcome !== 'Succeeded').map((o) => o.delivery.endpoint_id));
  const succeeded = outcomes.filter((o) => !failing.has(o.delivery.endpoint_id));
  const failed = outcomes.filter((o) => failing.has(o.delivery.endpoint_id));
  const recorded = new Map<Outcome, PromiseSettledResult<Recorded>>();
  const record = async (some: Outcome[], how: () => Promise<Recorded[]>) => {
    if (some.length === 0) return;
    try {
      (await how()).forEach((value, i) => recorded.set(some[i]!, { status: 'fulfilled', value }));
      return;
    } catch (err) {
      if (some.length === 1 || isPostgresUnavailable(err)) {
        for (const o of some) recorded.set(o, { status: 'rejected', reason: err });
        return;
      }
    }
    for (const o of some)
      try {
        const value = (await inTransaction(pool, (tx) => recordIn(tx, settings, [o])))[0]!;
        recorded.set(o, { status: 'fulfilled', value });
      } catch (reason) {
        recorded.set(o, { status: 'rejected', reason });
      }
  };
  await record(succeeded, () => recordSucceeded(pool, settings, succeeded));
  await record(failed, () => inTransaction(pool, (tx) => recordIn(tx, settings, failed)));
  return outcomes.map((o) => recorded.get(o)!);
}

async function recordSucceeded(pool: Pool, settings: RecordSettings, outcomes: Outcome[]): Promise<Recorded[]> {
  const column = <T>(f: (o: Outcome) => T) => outcomes.map(f);
  const chain = settings.chain;
  const { rows } = await pool.query<
    { id: string; replayed: boolean; breaker_was_open: boolean } & (
      { chained: false } | ({ chained: true } & Omit<Claimed, 'id'>)
    )
  >(
    prepared('record_successes', recordSuccesses, [
      column((o) => o.delivery.id),
      column((o) => o.delivery.lease_token),
      column((o) => o.delivery.event_id),
      column((o) => o.delivery.endpoint_id),
      column((o) => o.delivery.attempt_count),
      column((o) => o.result.statusCode),
      column((o) => o.result.latencyMs),
      column((o) => o.result.responseSnippet),
      column((o) => o.startedAt.toISOString()),
      settings.breaker.rate.window,
      column((o) => Boolean(chain && o.chain)),
      chain?.leaseMs ?? 0,
      chain?.inHand() ?? [],
      chain?.endpointConcurrency ?? 1,
      chain?.endpointConcurrencyMax ?? 1,
    ]),
  );
  const settled = new Map<string, { replayed: boolean; breaker_was_open: boolean }>();
  const chained = new Map<string, Claimed[]>(); // endpoint id → its next deliveries, oldest due first
  for (const r of rows) {
    if (!r.chained) {
      settled.set(r.id, r);
      continue;
    }
    const next: Claimed = {
      id: r.id,
      tenant_id: r.tenant_id,
      event_id: r.event_id,
      endpoint_id: r.endpoint_id,
      attempt_count: r.attempt_count,
      round_attempts: r.round_attempts,
      lease_token: r.lease_token,
      type: r.type,
      body: r.body,
      url: r.url,
      secret: r.secret,
      previous_secret: r.previous_secret,
    };
    chained.set(next.endpoint_id, [...(chained.get(next.endpoint_id) ?? []), next]);
  }
  const closedReported = new Set<string>(); // the breaker closed by the first success of its endpoint
  return outcomes.map((o): Recorded => {
    const row = settled.get(o.delivery.id);
    if (!row) return leaseLost;
    const closed = row.breaker_was_open && !closedReported.has(o.delivery.endpoint_id);
    if (closed) closedReported.add(o.delivery.endpoint_id);
    // one chained delivery per success that asked for one
    const next = o.chain ? chained.get(o.delivery.endpoint_id)?.shift() : undefined;
    return next
      ? { outcome: 'succeeded', breakerClosed: closed, next }
      : { outcome: 'succeeded', breakerClosed: closed };
  });
}

type Tx = Pick<Pool, 'query'>;

async function recordIn(tx: Tx, settings: RecordSettings, outcomes: Outcome[]): Promise<Recorded[]> {
  const column = <T>(f: (o: Outcome) => T) => outcomes.map(f);
  await tx.query(
    prepared('insert_attempts', insertAttempts, [
      column((o) => o.delivery.id),
      column((o) => o.delivery.event_id),
      column((o) => o.delivery.endpoint_id),
      column((o) => o.delivery.attempt_count),
      column((o) => o.result.outcome),
      column((o) => o.result.statusCode),
      column((o) => o.result.latencyMs),
      column((o) => errorText(o.result)),
      column((o) => o.result.responseSnippet),
      column((o) => o.startedAt.toISOString()),
    ]),
  );
  // The retry schedule's next wait of each failure (null: used up), unless a replay asked for meanwhile comes first.
  const retryInMs = column((o) =>
    o.result.outcome === 'Succeeded' ? null : listedDelayMs(settings.retryScheduleMs, o.delivery.round_attempts),
  );
  const settled = await tx.query<{ id: string; replayed: boolean }>(
    prepared('settle_deliveries', settleDeliveries, [
      column((o) => o.delivery.id),
      column((o) => o.delivery.lease_token),
      column((o) => o.result.outcome === 'Succeeded'),
      retryInMs,
      column((o) => errorText(o.result)),
    ]),
  );
  const replayedById = new Map(settled.rows.map((r) => [r.id, r.replayed]));

  // The endpoints' health, from the outcomes whose deliveries were still this dispatcher's.
  const byEndpoint = new Map<string, number[]>(); // endpoint id → indexes into outcomes, in order
  outcomes.forEach((o, i) => {
    if (!replayedById.has(o.delivery.id)) return;
    byEndpoint.set(o.delivery.endpoint_id, [...(byEndpoint.get(o.delivery.endpoint_id) ?? []), i]);
  });
  const effects = new Map<number, OutcomeEffect>();
  if (byEndpoint.size > 0) {
    const { rows: healths } = await tx.query<EndpointHealth & { id: string }>(
      prepared('lock_endpoints_health', lockEndpointsHealth, [[...byEndpoint.keys()]]),
    );
    const after = healths.map((h) => {
      const indexes = byEndpoint.get(h.id)!;
      const run = afterOutcomes(
        h,
        indexes.map((i) => outcomes[i]!.result.outcome !== 'Succeeded'),
        settings.breaker,
      );
      indexes.forEach((i, n) => effects.set(i, run.effects[n]!));
      return { id: h.id, ...run.after };
    });
    if (after.length > 0)
      await tx.query(
        prepared('update_endpoints_health', updateEndpointsHealth, [
          after.map((a) => a.id),
          after.map((a) => a.failures),
          after.map((a) => a.mask),
          after.map((a) => a.attempts),
          after.map((a) => a.trips),
          after.map((a) => a.opened),
          after.map((a) => a.probeMs),
          after.map((a) => a.succeeded),
          after.map((a) => a.failed),
          after.map((a) => a.failedLast),
        ]),
      );
  }

  // Deliveries that gave up: the first of each endpoint disables it, with its reason.
  const gaveUp = new Map<string, { index: number; reason: string }>();
  outcomes.forEach((o, i) => {
    const d = o.delivery;
    if (o.result.outcome === 'Succeeded' || replayedById.get(d.id) !== false || retryInMs[i] !== null) return;
    if (gaveUp.has(d.endpoint_id)) return;
    const reason = (
      `delivery of ${d.event_id} (${d.type}) failed ${d.round_attempts} attempt${d.round_attempts === 1 ? '' : 's'}; ` +
      `last: ${o.result.error ?? o.result.outcome}`
    ).slice(0, 1000);
    gaveUp.set(d.endpoint_id, { index: i, reason });
  });
  const disabled = new Map<number, { client_id: string; reason: string }>();
  if (gaveUp.size > 0) {
    const { rows } = await tx.query<{ id: string; client_id: string }>(disableEndpoints, [
      [...gaveUp.keys()],
      [...gaveUp.values()].map((g) => g.reason),
    ]);
    for (const r of rows) {
      const g = gaveUp.get(r.id)!;
      disabled.set(g.index, { client_id: r.client_id, reason: g.reason });
    }
  }

  return outcomes.map((o, i): Recorded => {
    const replayed = replayedById.get(o.delivery.id);
    if (replayed === undefined) return leaseLost;
    const effect = effects.get(i);
    const breakerOpened = effect?.opened ? { waitMs: effect.opened.waitMs, trips: effect.opened.trips } : null;
    if (o.result.outcome === 'Succeeded') return { outcome: 'succeeded', breakerClosed: effect?.closed ?? false };
    if (replayed) return { outcome: 'retry_scheduled', breakerOpened, retryInMs: 0 };
    const wait = retryInMs[i]!;
    return wait === null
      ? { outcome: 'gave_up', breakerOpened, disabled: disabled.get(i) ?? null }
      : { outcome: 'retry_scheduled', breakerOpened, retryInMs: wait };
  });
}
