import { z } from 'zod';
import { envelopeSchema } from '../messages.js';
import type { TargetFields } from './target-schema.js';

// inbound.targets.chunk v1: a slice of one import job's accepted targets, in item order.
export const chunkMessageType = 'inbound.targets.chunk';
export const chunkMessageVersion = 1;

/**
 * The gateway validated every target with targetFieldsSchema before producing it; re-running
 * that per target in the worker cost about half the worker's CPU. So a chunk decoded in full
 * (one that names no item count, or a dead-lettered one) is checked for its envelope and each
 * target's identity only, and one read by its header (the usual case) not item by item at all:
 * a missing or wrongly typed field is refused by PostgreSQL and the chunk dead-lettered like any
 * other poison message.
 */
const gatewayValidatedTarget = z.custom<TargetFields>(
  (v) => typeof v === 'object' && v !== null && typeof (v as { externalId?: unknown }).externalId === 'string',
  { message: 'target must be an object with an externalId' },
);

const chunkIdentity = {
  importJobId: z.string().regex(/^\d+$/),
  sourceSystem: z.string(),
  chunkIndex: z.number().int().min(0),
  chunkCount: z.number().int().min(1),
  /**
   * How many items `items` holds. Written by gateways since 2026-11-25 (optional, so chunks an
   * earlier gateway produced still decode): a worker that has it applies the chunk without parsing
   * its items (PostgreSQL reads them, and the count they make must be this one).
   */
  itemCount: z.number().int().min(1).optional(),
};

export const chunkPayloadSchema = z.object({
  ...chunkIdentity,
  /** Each accepted target with its index in the request (0-based; 0 for a single target). */
  items: z.array(z.object({ index: z.number().int().min(0), target: gatewayValidatedTarget })).min(1),
});

export type ChunkPayload = z.infer<typeof chunkPayloadSchema>;

const chunkEnvelope = envelopeSchema.extend({
  type: z.literal(chunkMessageType),
  version: z.literal(chunkMessageVersion),
});

export const chunkMessageSchema = chunkEnvelope.extend({ payload: chunkPayloadSchema });

/**
 * A chunk message read without its items (see src/workers/inbound/decode-chunk.ts): `items` is
 * the empty array spliced in for them, and the item count is required.
 */
export const chunkHeaderSchema = chunkEnvelope.extend({
  payload: z.object({ ...chunkIdentity, itemCount: z.number().int().min(1), items: z.array(z.never()).length(0) }),
});
