import type { z } from 'zod';
import type { InboundMessage } from '../shared/kafka/bus.js';
import { PermanentMessageError } from './permanent-error.js';

/** Decodes a message with its zod schema; anything undecodable is permanent (dead-lettered at once). */
export function decodeMessage<S extends z.ZodType>(message: InboundMessage, schema: S): z.output<S> {
  return decodeJson(message.value?.toString('utf8') ?? '', schema, 'message value');
}

/** decodeMessage, or null when the message is undecodable (a dead-letter hook then has no record to mark). */
export function decodeOrNull<S extends z.ZodType>(message: InboundMessage, schema: S): z.output<S> | null {
  try {
    return decodeMessage(message, schema);
  } catch {
    return null;
  }
}

/** decodeMessage for a part of a message (`what` names it in the error). */
export function decodeJson<S extends z.ZodType>(text: string, schema: S, what: string): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PermanentMessageError(`${what} is not JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new PermanentMessageError(`${what} does not match its schema: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}
