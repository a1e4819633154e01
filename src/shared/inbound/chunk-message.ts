import { z } from 'zod';
import { envelopeSchema } from '../messages.js';
import type { TargetFields } from './target-schema.js';

// inbound.targets.chunk v1: a slice of one import job's accepted targets, in item order.
export const chunkMessageType = 'inbound.targets.chunk';
export const chunkMessageVersion = 1;

/**
 * The gateway validated every target with targetFieldsSchema before producing it; re-running
 * that per target in the worker cost about half the worker's CPU. So the worker checks the
 * envelope and the identity of each target only: a wrongly typed field is refused by PostgreSQL
 * and the chunk dead-lettered like any other poison message.
 */
const gatewayValidatedTarget = z.custom<TargetFields>(
  (v) => typeof v === 'object' && v !== null && typeof (v as { externalId?: unknown }).externalId === 'string',
  { message: 'target must be an object with an externalId' },
);

export const chunkPayloadSchema = z.object({
  importJobId: z.string().regex(/^\d+$/),
  sourceSystem: z.string(),
  chunkIndex: z.number().int().min(0),
  chunkCount: z.number().int().min(1),
  /** Each accepted target with its index in the request (0-based; 0 for a single target). */
  items: z.array(z.object({ index: z.number().int().min(0), target: gatewayValidatedTarget })).min(1),
});

export type ChunkPayload = z.infer<typeof chunkPayloadSchema>;

export const chunkMessageSchema = envelopeSchema.extend({
  type: z.literal(chunkMessageType),
  version: z.literal(chunkMessageVersion),
  payload: chunkPayloadSchema,
});
