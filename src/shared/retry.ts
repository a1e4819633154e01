/**
 * Every loop that retries takes its waits from here. Doubling schedules use one formula,
 * `min(maxMs, baseMs × 2^(n-1))` for the n-th wait (n ≥ 1):
 *
 * | schedule        | waits (ms)                        | used by                                         |
 * |-----------------|-----------------------------------|-------------------------------------------------|
 * | messageRetry    | 400, 800, 1600, 3200 (5 attempts) | a worker message's transient failure            |
 * | dependencyWait  | 200 … 5000                        | a worker or dispatcher waiting for PostgreSQL   |
 * | edgeRecordWait  | 10 … 1000                         | a message whose edge record is not committed    |
 * | brokerAtStart   | 1000 … 30000                      | a worker process whose broker is away at start  |
 * | consumerRestart | 500 … 30000                       | a fresh consumer after kafkajs gave one up      |
 * | topicCreation   | 500 … 5000 (10 attempts)          | creating topics while a broker elects leaders   |
 * | pushRetry       | 500 … 30000 (12 attempts)         | connect-push: a batch answered 429/503 (no Retry-After) |
 * | eventListen     | 100 … 5000                        | the gateway's LISTEN connection for the event feed |
 * | kafkaClient     | 300 … 2000 (11 attempts)          | kafkajs's own retries (joining, fetching, producing), kafkajsRetry |
 * | (breaker)       | WEBHOOK_BREAKER_OPEN_MS … _MAX_MS | an open webhook endpoint breaker before its probe |
 *
 * kafkajs applies its row itself (kafkajsRetry), with ±20 % jitter: its waits only roughly follow.
 *
 * Webhook deliveries follow the operator's listed schedule instead (WEBHOOK_RETRY_SCHEDULE,
 * listedDelayMs): their waits are minutes to days, and each is recorded in PostgreSQL.
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
  brokerAtStart: { baseMs: 1000, maxMs: 30_000, attempts: Infinity },
  consumerRestart: { baseMs: 500, maxMs: 30_000, attempts: Infinity },
  topicCreation: { baseMs: 500, maxMs: 5000, attempts: 10 },
  pushRetry: { baseMs: 500, maxMs: 30_000, attempts: 12 },
  eventListen: { baseMs: 100, maxMs: 5000, attempts: Infinity },
  // Every 2 s at most (kafkajs's default grows to 9.6 s): a new coordinator or leader is found soon
  // after a broker's loss, with about the default's patience in all (~16 s) before a crash.
  kafkaClient: { baseMs: 300, maxMs: 2000, attempts: 11 },
} satisfies Record<string, RetrySchedule>;

/** The wait before attempt n + 1, after n failed attempts (n ≥ 1). */
export function backoffMs(schedule: RetrySchedule, failures: number): number {
  const n = Math.max(1, failures);
  return Math.min(schedule.maxMs, schedule.baseMs * 2 ** Math.min(n - 1, 20));
}

/** A schedule as kafkajs's `retry` option (its `retries` counts the attempts after the first). */
export const kafkajsRetry = ({ baseMs, maxMs, attempts }: RetrySchedule) => ({
  initialRetryTime: baseMs,
  maxRetryTime: maxMs,
  retries: attempts - 1,
});

/** Whether another attempt is allowed after this many failures. */
export const mayRetry = (schedule: RetrySchedule, failures: number) => failures < schedule.attempts;

/** The wait after `attempts` failed ones on a listed schedule, ±20 % (so retries spread); null: give up. */
export function listedDelayMs(scheduleMs: readonly number[], attempts: number, random = Math.random): number | null {
  const base = scheduleMs[attempts - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.8 + 0.4 * random()));
}

/**
 * Waits ms, or less when signal aborts (never rejects: the caller checks why it woke). On the
 * global setTimeout, so tests with fake timers (vi.useFakeTimers) control it.
 */
export const pause = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, signal?.aborted ? 0 : ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Runs attempt until it succeeds, waiting `schedule`'s backoff after each failure that
 * `retriable` accepts (and while the schedule allows); any other failure is thrown at once, and
 * so is the last one once `signal` aborts (which also cuts the wait short).
 */
export async function retrying<T>(
  schedule: RetrySchedule,
  attempt: () => Promise<T>,
  options: {
    retriable(err: unknown): boolean;
    onRetry?(err: unknown, failures: number, waitMs: number): void;
    signal?: AbortSignal;
  },
): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await attempt();
    } catch (err) {
      if (!options.retriable(err) || !mayRetry(schedule, failures) || options.signal?.aborted) throw err;
      const waitMs = backoffMs(schedule, failures);
      options.onRetry?.(err, failures, waitMs);
      await pause(waitMs, options.signal);
    }
  }
}
