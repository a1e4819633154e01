import { PartitionsRevokedError, type BatchContext, type InboundMessage } from '../shared/kafka/bus.js';

/** A message that can never be applied (undecodable, unknown version): dead-letter it without retrying. */
export class PermanentMessageError extends Error {
  /** Read by classifyFailure (shared/db/errors.ts): permanent whatever else the error says. */
  readonly permanent = true;
}

const failedMessages = new WeakMap<object, InboundMessage>();

/**
 * How a kind's handleBatch applies its messages: one at a time, in offset order, each on its own
 * (its own transaction), with a heartbeat after each. When one throws, the error is tagged with
 * that message, which tells the consumer loop that every message before it was applied: the
 * loop goes on from the failed message instead of applying the batch again, dead-letters it at
 * once when the failure is permanent, and never attempts a poison message twice.
 */
export async function applyEach(
  messages: InboundMessage[],
  ctx: BatchContext,
  apply: (message: InboundMessage) => Promise<void>,
): Promise<void> {
  for (const message of messages) {
    // Stopping: give the rest of the batch back uncommitted (the next owner applies it) rather
    // than apply a whole fetched backlog past the shutdown timeout.
    if (ctx.isStopping()) throw new PartitionsRevokedError(new Error('the worker is stopping'));
    try {
      await apply(message);
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
