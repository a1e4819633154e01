/**
 * Retry schedules: one formula, `min(maxMs, baseMs × 2^(n-1))` for the n-th wait (n ≥ 1). The
 * workers' consumer loop takes its schedules from here (the webhook dispatcher, the consumer
 * group's restarts and the gateway's producer still have their own: issue 25 moves them here):
 *
 * | schedule        | waits (ms)                       | used by                                      |
 * |-----------------|----------------------------------|----------------------------------------------|
 * | messageRetry    | 400, 800, 1600, 3200 (5 attempts) | a worker message's transient failure         |
 * | dependencyWait  | 200 … 5000                       | a worker waiting for PostgreSQL or Kafka     |
 * | edgeRecordWait  | 10 … 1000                        | a message whose edge record is not committed |
 * | pushRetry       | 500 … 30000 (12 attempts)        | connect-push: a batch answered 429/503, or no answer, without Retry-After |
 */
export type RetrySchedule = {
  /** The first wait. */
  baseMs: number;
  /** No wait is longer. */
  maxMs: number;
  /** Attempts in all before giving up (Infinity: never give up). */
  attempts: number;
};

export const schedules = {
  messageRetry: { baseMs: 400, maxMs: 10_000, attempts: 5 },
  dependencyWait: { baseMs: 200, maxMs: 5000, attempts: Infinity },
  edgeRecordWait: { baseMs: 10, maxMs: 1000, attempts: Infinity },
  pushRetry: { baseMs: 500, maxMs: 30_000, attempts: 12 },
} satisfies Record<string, RetrySchedule>;

/** The wait before attempt n + 1, after n failed attempts (n ≥ 1). */
export function backoffMs(schedule: RetrySchedule, failures: number): number {
  const n = Math.max(1, failures);
  return Math.min(schedule.maxMs, schedule.baseMs * 2 ** Math.min(n - 1, 20));
}

/** Whether another attempt is allowed after this many failures. */
export const mayRetry = (schedule: RetrySchedule, failures: number) => failures < schedule.attempts;
