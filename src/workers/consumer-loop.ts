import {
  PartitionsRevokedError,
  type BatchContext,
  type ConsumerGroup,
  type InboundMessage,
} from '../shared/kafka/bus.js';
import { classifyFailure } from '../shared/db/errors.js';
import { failedMessageOf } from './permanent-error.js';
import { deadLetterTopic, topicsWithDeadLetters, type WorkerDeps, type WorkerKind } from './worker-kind.js';
import { noWorkerMetrics, type MessageOutcome } from './worker-metrics.js';

export type RetryPolicy = { attempts: number; baseDelayMs: number; maxDelayMs: number };
export const defaultRetryPolicy: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 10_000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));

/** A message of the batch in hand, neither applied nor dead-lettered yet. */
type Pending = {
  message: InboundMessage;
  /** Failed attempts that count (an unreachable database is no verdict on the message). */
  failures: number;
  /** While it waits out a backoff: not tried again before this time (ms since the epoch). */
  notBefore: number;
  lastError: Error | null;
};

/**
 * What may be applied now, in offset order: messages not waiting out a backoff and not behind an
 * earlier message of their key that is (one key's messages stay in order; others go past).
 */
function runnable(pending: Pending[], now: number, oneByOne: boolean): Pending[] {
  const waitingKeys = new Set<string | null>();
  const run: Pending[] = [];
  for (const p of pending) {
    if (waitingKeys.has(p.message.key)) continue;
    if (p.notBefore > now) {
      waitingKeys.add(p.message.key);
      continue;
    }
    run.push(p);
    if (oneByOne) break;
  }
  return run;
}

/**
 * The one failure policy for consumers. Each failed attempt is classified (classifyFailure,
 * shared/db/errors.ts):
 * - permanent (data PostgreSQL refuses, a PermanentMessageError): the message goes to
 *   `<topic>.dlq` at once, with the error and its origin in headers, and the kind is told
 *   (onDeadLetter marks its record failed): no retry, no backoff, so a poison message costs its
 *   partition one attempt;
 * - transient (deadlock, serialization, contention, statement timeout, anything unrecognised):
 *   the message is retried with exponential backoff up to `attempts` times, then dead-lettered;
 *   while it waits, the other messages of the batch go on (only later messages of its key wait
 *   behind it, to keep their order);
 * - outage (PostgreSQL unreachable): no verdict on anything; the partition waits for the database
 *   without using attempts up, so good messages are not dead-lettered during an outage.
 * A kind that applies its batch with applyEach says which message failed (those before it are
 * applied); the loop goes on from there. A batch that fails without saying so is retried whole
 * while the failure is transient, then (or at once when it is permanent) message by message.
 * Losing the partition in a rebalance abandons the batch uncommitted, as does stopping with a
 * retry pending; applies are idempotent, so the next owner applies it again. Nothing is dropped
 * silently.
 */
export async function runWorkerKind(
  kind: WorkerKind,
  group: ConsumerGroup,
  deps: WorkerDeps,
  policy: RetryPolicy = defaultRetryPolicy,
): Promise<void> {
  const log = deps.logger.child({ worker: kind.name });
  const metrics = deps.metrics ?? noWorkerMetrics;
  const count = (outcome: MessageOutcome, messages: number) => {
    if (messages > 0) metrics.messages(kind.name, outcome, messages);
  };
  const originOf = (m: InboundMessage) => `${m.topic}/${m.partition}/${m.offset}`;
  const backoffMs = (failures: number) => Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(failures, 10));

  /** Waits ms, heartbeating at least every second so the group keeps the partition meanwhile. */
  async function pause(ms: number, ctx: BatchContext): Promise<void> {
    const until = Date.now() + ms;
    for (;;) {
      const left = until - Date.now();
      if (left > 0) await sleep(Math.min(left, 1000));
      await ctx.heartbeat();
      if (Date.now() >= until) return;
    }
  }

  /**
   * Tells the kind (e.g. marks the import job failed). PostgreSQL being briefly away must not
   * leave the record unmarked, so this is retried like an apply; a hook that still fails is
   * logged (the message is safe in the dead-letter topic) and the partition moves on.
   */
  async function reportDeadLetter(message: InboundMessage, error: Error, ctx: BatchContext): Promise<void> {
    if (!kind.onDeadLetter) return;
    let failures = 0;
    for (;;) {
      try {
        await kind.onDeadLetter(message, error, deps);
        return;
      } catch (err) {
        const hookError = asError(err);
        const verdict = classifyFailure(hookError);
        if (verdict !== 'outage') failures++;
        const origin = originOf(message);
        if (verdict === 'permanent' || failures >= policy.attempts) {
          log.error({ err: hookError, origin }, 'dead-lettered message could not be reported to its kind');
          return;
        }
        log.warn({ err: hookError, origin, verdict, failures }, 'reporting a dead-lettered message failed');
        if (ctx.isStopping()) throw hookError; // uncommitted: the next owner dead-letters it again
        await pause(backoffMs(failures), ctx);
      }
    }
  }

  async function deadLetter(message: InboundMessage, error: Error, ctx: BatchContext): Promise<void> {
    const origin = originOf(message);
    await deps.bus.produce(deadLetterTopic(message.topic), [
      {
        key: message.key ?? '',
        value: message.value ?? '',
        headers: {
          ...message.headers,
          'x-dlq-error': error.message.slice(0, 1000),
          'x-dlq-origin': origin,
          'x-dlq-worker': kind.name,
        },
      },
    ]);
    log.error({ err: error, origin }, 'message dead-lettered');
    count('dead_lettered', 1);
    await reportDeadLetter(message, error, ctx);
  }

  /** Applies one fetched batch (one partition, offset order) under the policy. */
  async function applyBatch(messages: InboundMessage[], ctx: BatchContext): Promise<void> {
    let pending: Pending[] = messages.map((message) => ({ message, failures: 0, notBefore: 0, lastError: null }));
    let batchFailures = 0; // failures of the batch as a whole that no message was named for
    let oneByOne = false; // such a batch is then applied message by message
    const settle = (done: Pending[]) => {
      const settled = new Set(done);
      pending = pending.filter((p) => !settled.has(p));
    };

    while (pending.length > 0) {
      const now = Date.now();
      const run = runnable(pending, now, oneByOne);
      if (run.length === 0) {
        // Everything left waits out a backoff (or is behind a message of its key that does).
        const waiting = pending.filter((p) => p.notBefore > now);
        if (ctx.isStopping()) throw waiting[0]!.lastError!; // leave it uncommitted for the next owner
        await pause(Math.min(...waiting.map((p) => p.notBefore)) - now, ctx);
        continue;
      }

      const started = performance.now();
      try {
        await kind.handleBatch(
          run.map((p) => p.message),
          deps,
          ctx,
        );
        settle(run);
        count('applied', run.length);
        metrics.applyDuration(kind.name, (performance.now() - started) / 1000);
        continue;
      } catch (err) {
        const error = asError(err);
        // The group moved the partition (a member joined or left): no verdict on the messages;
        // give the batch up uncommitted, and its next owner applies it.
        if (error instanceof PartitionsRevokedError) throw error;
        const verdict = classifyFailure(error);
        const outage = verdict === 'outage';
        const durationMs = Math.round(performance.now() - started);
        const named = failedMessageOf(error);
        let at = named ? run.findIndex((p) => p.message === named) : -1;
        if (at < 0 && run.length === 1) at = 0; // a batch of one: that message failed

        if (at < 0) {
          // Unattributed: all we know is that the batch failed.
          if (!outage) batchFailures++;
          count('failed_attempt', run.length);
          const what = `batch of ${run.length}`;
          log.warn({ err: error, what, verdict, failures: batchFailures, outage, durationMs }, 'worker attempt failed');
          if (verdict === 'permanent' || batchFailures >= policy.attempts) {
            oneByOne = true; // find the culprit alone, at once
            continue;
          }
          if (ctx.isStopping()) throw error;
          await pause(backoffMs(batchFailures), ctx);
          continue;
        }

        settle(run.slice(0, at)); // applied before the failure
        count('applied', at);
        const failed = run[at]!;
        if (!outage) failed.failures++;
        count('failed_attempt', 1);
        log.warn(
          {
            err: error,
            what: `message ${failed.message.offset}`,
            origin: originOf(failed.message),
            verdict,
            failures: failed.failures,
            outage,
            durationMs,
          },
          'worker attempt failed',
        );
        if (verdict === 'permanent' || failed.failures >= policy.attempts) {
          await deadLetter(failed.message, error, ctx);
          settle([failed]);
          await ctx.heartbeat();
          continue;
        }
        if (ctx.isStopping()) throw error; // leave it uncommitted for the next owner
        if (outage) {
          await pause(backoffMs(failed.failures), ctx); // nothing applies now: wait for the database
          continue;
        }
        failed.notBefore = Date.now() + backoffMs(failed.failures);
        failed.lastError = error;
      }
    }
  }

  const topics = kind.topics(deps.config);
  await deps.bus.ensureTopics(topicsWithDeadLetters(kind, deps.config));
  await group.run(
    topics.map((t) => t.topic),
    applyBatch,
  );
}
