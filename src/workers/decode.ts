import type { z } from 'zod';
import type { InboundMessage } from '../shared/kafka/bus.js';
import { PermanentMessageError } from './permanent-error.js';

/** Decodes a message with its zod schema; anything undecodable is permanent (dead-lettered at once). */
export function decodeMessage<S extends z.ZodType>(message: InboundMessage, schema: S): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(message.value?.toString('utf8') ?? '');
  } catch {
    throw new PermanentMessageError('message value is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new PermanentMessageError(`message does not match its schema: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}
