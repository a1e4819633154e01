import { PartitionsRevokedError, type BatchContext, type InboundMessage } from '../shared/kafka/bus.js';
import type { Logger } from '../shared/logger.js';
import { extractFrom, inSpan, SpanKind } from '../shared/tracing/context.js';

/** A message that can never be applied (undecodable, unknown version): dead-letter it without retrying. */
export class PermanentMessageError extends Error {
  /** Read by classifyFailure (shared/db/errors.ts): permanent whatever else the error says. */
  readonly permanent = true;
}

const failedMessages = new WeakMap<object, InboundMessage>();

/**
 * How a kind's handleBatch applies its messages: one at a time, in offset order, each on its own
 * (its own transaction), with a heartbeat after each. Each apply runs in a span continuing the
 * trace its producer sent (`traceparent` header) with the request's correlation id, so every log
 * line of it carries both; one info line per message says it was applied. When one throws, the error is tagged with
 * that message, which tells the consumer loop that every message before it was applied: the
 * loop goes on from the failed message instead of applying the batch again, dead-letters it at
 * once when the failure is permanent, and never attempts a poison message twice.
 */
export async function applyEach(
  messages: InboundMessage[],
  ctx: BatchContext,
  apply: (message: InboundMessage) => Promise<void>,
  log: Logger,
): Promise<void> {
  for (const message of messages) {
    // Stopping: give the rest of the batch back uncommitted (the next owner applies it) rather
    // than apply a whole fetched backlog past the shutdown timeout.
    if (ctx.isStopping()) throw new PartitionsRevokedError(new Error('the worker is stopping'));
    const origin = `${message.topic}/${message.partition}/${message.offset}`;
    const started = performance.now();
    try {
      await inSpan(
        `apply ${message.topic}`,
        {
          parent: extractFrom(message.headers),
          kind: SpanKind.CONSUMER,
          attributes: {
            'messaging.system': 'kafka',
            'messaging.destination.name': message.topic,
            'messaging.kafka.offset': Number(message.offset),
            'messaging.destination.partition.id': String(message.partition),
          },
        },
        async () => {
          await apply(message);
          log.info({ origin, durationMs: Math.round((performance.now() - started) * 10) / 10 }, 'message applied');
        },
      );
    } catch (err) {
      if (typeof err === 'object' && err !== null) failedMessages.set(err, message);
      throw err;
    }
    await ctx.heartbeat();
  }
}

/** The message whose apply threw this error (see applyEach), if a kind said so. */
export function failedMessageOf(err: unknown): InboundMessage | undefined {
  return typeof err === 'object' && err !== null ? failedMessages.get(err) : undefined;
}
