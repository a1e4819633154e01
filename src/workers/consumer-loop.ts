import {
  PartitionsRevokedError,
  type BatchContext,
  type ConsumerGroup,
  type InboundMessage,
} from '../shared/kafka/bus.js';
import { isConnectionError } from '../shared/db/errors.js';
import { PermanentMessageError } from './permanent-error.js';
import { deadLetterTopic, type WorkerDeps, type WorkerKind } from './worker-kind.js';

export type RetryPolicy = { attempts: number; baseDelayMs: number; maxDelayMs: number };
export const defaultRetryPolicy: RetryPolicy = { attempts: 5, baseDelayMs: 200, maxDelayMs: 10_000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The one failure policy for consumers: a batch that throws is retried with exponential
 * backoff; if it still fails, its messages are retried one by one, and a message that keeps
 * failing goes to `<topic>.dlq` (with the error and its origin in headers) before the
 * partition moves on. A PermanentMessageError skips the retries; PostgreSQL being unreachable
 * does not use them up (the partition waits for the database instead of dead-lettering good
 * messages during an outage), and losing the partition in a rebalance abandons the batch
 * uncommitted. Nothing is dropped silently.
 */
export async function runWorkerKind(
  kind: WorkerKind,
  group: ConsumerGroup,
  deps: WorkerDeps,
  policy: RetryPolicy = defaultRetryPolicy,
): Promise<void> {
  const log = deps.logger.child({ worker: kind.name });

  async function withRetries(what: string, fn: () => Promise<void>, ctx: BatchContext): Promise<Error | null> {
    let failures = 0; // attempts that count: an unreachable database is no verdict on the message
    for (;;) {
      const started = performance.now();
      try {
        await fn();
        return null;
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        if (error instanceof PermanentMessageError) return error;
        // The group moved the partition (a member joined or left): no verdict on the messages;
        // give the batch up uncommitted, and its next owner applies it.
        if (error instanceof PartitionsRevokedError) throw error;
        const outage = isConnectionError(error);
        if (!outage) failures++;
        const durationMs = Math.round(performance.now() - started);
        log.warn({ err: error, what, failures, outage, durationMs }, 'worker attempt failed');
        if (ctx.isStopping()) throw error; // leave it uncommitted for the next owner
        if (!outage && failures >= policy.attempts) return error;
        await sleep(Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(failures, 10)));
        await ctx.heartbeat();
      }
    }
  }

  async function deadLetter(message: InboundMessage, error: Error): Promise<void> {
    await deps.bus.produce(deadLetterTopic(message.topic), [
      {
        key: message.key ?? '',
        value: message.value ?? '',
        headers: {
          ...message.headers,
          'x-dlq-error': error.message.slice(0, 1000),
          'x-dlq-origin': `${message.topic}/${message.partition}/${message.offset}`,
          'x-dlq-worker': kind.name,
        },
      },
    ]);
    log.error(
      { err: error, origin: `${message.topic}/${message.partition}/${message.offset}` },
      'message dead-lettered',
    );
    await kind.onDeadLetter?.(message, error, deps);
  }

  const topics = kind.topics(deps.config);
  // A dead-letter topic takes what its topic takes (max.message.bytes), or a large poison message
  // could never be dead-lettered and would block its partition.
  await deps.bus.ensureTopics([
    ...topics,
    ...topics.map((t) => ({ topic: deadLetterTopic(t.topic), partitions: 1, configs: t.configs })),
  ]);
  await group.run(
    topics.map((t) => t.topic),
    async (messages, ctx) => {
      const batchError = await withRetries(
        `batch of ${messages.length}`,
        () => kind.handleBatch(messages, deps, ctx),
        ctx,
      );
      if (!batchError) return;
      for (const message of messages) {
        const error = await withRetries(`message ${message.offset}`, () => kind.handleBatch([message], deps, ctx), ctx);
        if (error) await deadLetter(message, error);
        await ctx.heartbeat();
      }
    },
  );
}
