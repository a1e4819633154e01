import { z } from 'zod';
import type { OutboundMessage } from './kafka/message-bus.js';

// The versioned envelope every Kafka message of ours carries. `type` + `version` select the
// payload schema; the ids assigned at the edge travel with it, so workers never invent ids.
export const envelopeSchema = z.object({
  type: z.string(),
  version: z.number().int(),
  tenantId: z.uuid(),
  clientId: z.uuid(),
  /** When the gateway produced it (ISO 8601); workers use it to judge orphans. */
  producedAt: z.iso.datetime(),
  requestId: z.string().nullable(),
  correlationId: z.string().nullable(),
  payload: z.unknown(),
});

/** The schema of one message type at one version: the envelope with that type, version and payload. */
export const messageSchema = <T extends string, V extends number, P extends z.ZodType>(
  type: T,
  version: V,
  payload: P,
) => envelopeSchema.extend({ type: z.literal(type), version: z.literal(version), payload });

export type Envelope<P> = Omit<z.infer<typeof envelopeSchema>, 'payload'> & { payload: P };

export function envelope<P>(
  type: string,
  version: number,
  ids: { tenantId: string; clientId: string; requestId: string | null; correlationId: string | null },
  payload: P,
): Envelope<P> {
  return { type, version, ...ids, producedAt: new Date().toISOString(), payload };
}

/** The header a worker reads a message's tenant from, to share its capacity fairly (workers/fair-queue.ts). */
export const tenantHeader = 'tenant-id';

/** The Kafka headers every message of ours carries: what it is, and whose. */
export const messageHeaders = (type: string, version: number, tenantId: string): Record<string, string> => ({
  'message-type': type,
  'message-version': String(version),
  [tenantHeader]: tenantId,
});

/** A message whose value is its envelope as JSON, with the headers its envelope names. */
export const jsonMessage = <P>(key: string, e: Envelope<P>): OutboundMessage => ({
  key,
  value: JSON.stringify(e),
  headers: messageHeaders(e.type, e.version, e.tenantId),
});
