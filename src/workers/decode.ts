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

/**
 * A message of a newer version than this release reads (issue 52): a gateway of the next release
 * wrote it while this worker still runs, during a rolling upgrade. Not a poison message: it waits,
 * holding only its key and uncommitted, for a worker of the release that reads it (the partition's
 * next owner, once this one is replaced), instead of being dead-lettered.
 */
export class NewerMessageVersion extends Error {
  constructor(
    readonly version: number,
    readonly readable: number,
  ) {
    super(
      `message version ${version} is newer than this release reads (${readable}); waiting for a worker that reads it`,
    );
  }
}

/** The type and the one version a message schema accepts (messageSchema's literals), if it is such a schema. */
const typeAndVersionOf = (schema: z.ZodType): { type: unknown; version: number } | undefined => {
  const shape = (schema as { shape?: { type?: { value?: unknown }; version?: { value?: unknown } } }).shape;
  const version = shape?.version?.value;
  return typeof version === 'number' ? { type: shape?.type?.value, version } : undefined;
};

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
    // Its own type at a version above the one this release reads: the next release wrote it.
    const { type, version } = (json ?? {}) as { type?: unknown; version?: unknown };
    const readable = typeAndVersionOf(schema);
    if (readable && type === readable.type && Number.isInteger(version) && (version as number) > readable.version) {
      throw new NewerMessageVersion(version as number, readable.version);
    }
    const issue = parsed.error.issues[0]!;
    throw new PermanentMessageError(`${what} does not match its schema: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}
