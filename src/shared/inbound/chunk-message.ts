import { z } from 'zod';
import { envelopeSchema } from '../messages.js';
import type { TargetFields } from './target-schema.js';

// inbound.targets.chunk: a slice of one import job's accepted targets, in item order. Gateways
// write v2 (a header line, then the targets as rows PostgreSQL reads with COPY, see
// chunkRowsVersion); workers read v2 and v1 (one JSON document: chunks already in a topic when
// gateways moved to v2).
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

/**
 * inbound.targets.chunk v2: the UTF-8 of one line of JSON (the envelope; its payload the chunk's
 * identity and item count), a newline, then one row per item in PostgreSQL's COPY text format
 * (columns `chunkRowColumns`, tab-separated, `\\N` for NULL, each row ending in a newline).
 * PostgreSQL reads the rows with COPY instead of parsing a JSON document of them: about 40% less
 * of its CPU per applied target (src/workers/inbound/sql.ts). The gateway writes them with
 * src/gateway/inbound/chunk-rows.ts.
 */
export const chunkRowsVersion = 2;

/** The columns of a v2 chunk's rows, in order; the worker's staging table has these. */
export const chunkRowColumns = [
  'item_index',
  'external_id',
  'name',
  'address',
  'latitude',
  'longitude',
  'time_windows',
  'service_duration_minutes',
  'priority',
  'tags',
  'metadata',
] as const;

/** The header line of a v2 chunk message. */
export const chunkRowsHeaderSchema = envelopeSchema.extend({
  type: z.literal(chunkMessageType),
  version: z.literal(chunkRowsVersion),
  payload: z.object({ ...chunkIdentity, itemCount: z.number().int().min(1) }),
});
