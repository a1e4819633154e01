// What the consumer loop and the webhook dispatcher report where they decide an outcome.
// ops/metrics.ts counts it for /metrics; tests that do not care get noWorkerMetrics.

/**
 * A message's fate in the consumer loop: applied (its kind's handler accepted it; this includes
 * what the kind skips as already applied or orphaned), one failed_attempt per attempt that threw
 * (transient, permanent or while PostgreSQL was unreachable), dead_lettered once it went to
 * `<topic>.dlq`.
 */
export type MessageOutcome = 'applied' | 'failed_attempt' | 'dead_lettered';

/**
 * A recorded webhook attempt: succeeded (a 2xx; the delivery is Succeeded), retry_scheduled (it
 * failed and another attempt is due later), gave_up (the last attempt of the schedule failed: the
 * delivery is Failed, its endpoint Disabled), lease_lost (made, but another dispatcher had taken
 * the delivery over by the time its outcome was recorded).
 */
export type WebhookOutcome = 'succeeded' | 'retry_scheduled' | 'gave_up' | 'lease_lost';

/** A webhook endpoint's circuit breaker opened (again, after a failed probe) or closed (a success). */
export type BreakerTransition = 'opened' | 'closed';

/** Why a LISTEN connection was replaced (shared/db/listener.ts): it failed, the server ended it, or its check failed. */
export const listenLosses = ['error', 'end', 'check'] as const;
export type ListenLossReason = (typeof listenLosses)[number];

/**
 * How the inbound worker applied a chunk (src/workers/inbound/apply-chunk.ts): `copied` (all its
 * targets new: COPY straight into `targets`), `upserted` (through the staging table and upsert),
 * `duplicate` (applied before: nothing changed), `orphan` (its import job does not exist).
 */
export const inboundChunkOutcomes = ['copied', 'upserted', 'duplicate', 'orphan'] as const;
export type InboundChunkOutcome = (typeof inboundChunkOutcomes)[number];

export interface WorkerMetrics {
  messages(kind: string, outcome: MessageOutcome, count?: number): void;
  /** Seconds one successful apply of one message took. */
  applyDuration(kind: string, seconds: number): void;
  webhookAttempt(outcome: WebhookOutcome): void;
  webhookBreaker(transition: BreakerTransition): void;
  /** The dispatcher's LISTEN connection (wake.ts) was lost and is being replaced; it polls meanwhile. */
  webhookListenLost(reason: ListenLossReason): void;
  /** A renewal of the leases of the deliveries in hand failed (lease.ts); tried again at its next tick. */
  webhookLeaseRenewalFailed(): void;
  inboundChunk(outcome: InboundChunkOutcome): void;
  /** Rows the retention pruner deleted from a table (its parents: import_jobs, with their chunks and drafts). */
  pruned(table: string, rows: number): void;
}

export const noWorkerMetrics: WorkerMetrics = {
  messages: () => undefined,
  applyDuration: () => undefined,
  webhookAttempt: () => undefined,
  webhookBreaker: () => undefined,
  webhookListenLost: () => undefined,
  webhookLeaseRenewalFailed: () => undefined,
  inboundChunk: () => undefined,
  pruned: () => undefined,
};
