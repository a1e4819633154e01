import type { Config } from '../../shared/config.js';
import { inTransaction, type Pool, type PoolClient } from '../../shared/db/pool.js';
import { listedDelayMs } from '../../shared/retry.js';
import type { WebhookOutcome } from '../worker-metrics.js';
import { afterFailure, type BreakerSettings, type EndpointHealth } from './breaker.js';
import type { AttemptResult } from './post.js';
import {
  disableEndpoint,
  endpointFailed,
  endpointSucceeded,
  insertAttempt,
  lockEndpointHealth,
  markGaveUp,
  markSucceeded,
  requeueReplayed,
  scheduleRetry,
} from './sql.js';

// What an attempt's outcome changes, one function per outcome, in one transaction: the attempt's
// row, the delivery (Succeeded, Pending again later, or Failed) and its endpoint (failures, the
// breaker, Disabled). Every change to a delivery requires this dispatcher's lease token: if
// another dispatcher took the delivery over meanwhile, nothing is changed (lease_lost). A replay
// asked for while the attempt was in flight queues the delivery again whatever the outcome
// (reported as succeeded, or as a retry due now); the endpoint's health still counts the outcome.

/** A delivery as the claim returns it; its counts as beginAttempt left them once it began (attempt.ts). */
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
  | { outcome: 'succeeded'; breakerClosed: boolean }
  | { outcome: 'retry_scheduled'; breakerOpened: BreakerOpened | null; retryInMs: number }
  | { outcome: 'gave_up'; breakerOpened: BreakerOpened | null; disabled: { client_id: string; reason: string } | null }
  | { outcome: Extract<WebhookOutcome, 'lease_lost'> };

export type BreakerOpened = { waitMs: number; trips: number };

export type RecordSettings = { retryScheduleMs: Config['webhooks']['retryScheduleMs']; breaker: BreakerSettings };

const leaseLost = { outcome: 'lease_lost' } as const;
const errorText = (result: AttemptResult) => result.error?.slice(0, 1000) ?? null;

export function recordOutcome(
  pool: Pool,
  settings: RecordSettings,
  d: Claimed,
  startedAt: Date,
  result: AttemptResult,
): Promise<Recorded> {
  return inTransaction(pool, async (tx) => {
    await tx.query(insertAttempt, [
      d.id,
      d.event_id,
      d.endpoint_id,
      d.attempt_count,
      result.outcome,
      result.statusCode,
      result.latencyMs,
      errorText(result),
      result.responseSnippet,
      startedAt,
    ]);
    const replayed = (await tx.query(requeueReplayed, [d.id, d.lease_token, errorText(result)])).rowCount === 1;
    if (result.outcome === 'Succeeded') return succeeded(tx, d, settings.breaker, replayed);
    if (replayed)
      return { outcome: 'retry_scheduled', breakerOpened: await endpointFails(tx, d, settings.breaker), retryInMs: 0 };
    const retryInMs = listedDelayMs(settings.retryScheduleMs, d.round_attempts);
    return retryInMs === null
      ? gaveUp(tx, d, result, settings.breaker)
      : retryLater(tx, d, result, retryInMs, settings.breaker);
  });
}

async function succeeded(tx: PoolClient, d: Claimed, breaker: BreakerSettings, replayed: boolean): Promise<Recorded> {
  if (!replayed && (await tx.query(markSucceeded, [d.id, d.lease_token])).rowCount === 0) return leaseLost;
  const health = await lockHealth(tx, d.endpoint_id);
  await tx.query(endpointSucceeded, [d.endpoint_id, breaker.rate.window]);
  return { outcome: 'succeeded', breakerClosed: health.open };
}

async function retryLater(
  tx: PoolClient,
  d: Claimed,
  result: AttemptResult,
  retryInMs: number,
  breaker: BreakerSettings,
): Promise<Recorded> {
  const updated = await tx.query(scheduleRetry, [d.id, d.lease_token, retryInMs, errorText(result)]);
  if (updated.rowCount === 0) return leaseLost;
  return { outcome: 'retry_scheduled', breakerOpened: await endpointFails(tx, d, breaker), retryInMs };
}

/** The last attempt of the schedule failed: the delivery is Failed, its endpoint Disabled. */
async function gaveUp(tx: PoolClient, d: Claimed, result: AttemptResult, breaker: BreakerSettings): Promise<Recorded> {
  if ((await tx.query(markGaveUp, [d.id, d.lease_token, errorText(result)])).rowCount === 0) return leaseLost;
  const breakerOpened = await endpointFails(tx, d, breaker);
  const attempts = d.round_attempts;
  const reason = (
    `delivery of ${d.event_id} (${d.type}) failed ${attempts} attempt${attempts === 1 ? '' : 's'}; ` +
    `last: ${result.error ?? result.outcome}`
  ).slice(0, 1000);
  const disabled = await tx.query(disableEndpoint, [d.endpoint_id, reason]);
  return {
    outcome: 'gave_up',
    breakerOpened,
    disabled: disabled.rowCount ? { client_id: disabled.rows[0].client_id, reason } : null,
  };
}

/** One more failure of the endpoint; opens its breaker when breaker.ts says so. */
async function endpointFails(tx: PoolClient, d: Claimed, breaker: BreakerSettings): Promise<BreakerOpened | null> {
  const next = afterFailure(await lockHealth(tx, d.endpoint_id), breaker);
  await tx.query(endpointFailed, [
    d.endpoint_id,
    breaker.rate.window,
    next.opens ? next.waitMs : null,
    next.opens ? next.trips : null,
  ]);
  return next.opens ? { waitMs: next.waitMs, trips: next.trips } : null;
}

// Locked after the delivery's row, the order every writer of both takes (endpoints.ts deleteEndpoint).
const lockHealth = async (tx: PoolClient, endpointId: string): Promise<EndpointHealth> =>
  (await tx.query<EndpointHealth>(lockEndpointHealth, [endpointId])).rows[0]!;
