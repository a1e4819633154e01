import { z } from 'zod';
import { messageSchema } from '../messages.js';

// inbound.targets.chunk: a slice of one import job's accepted targets, in item order.
export const chunkMessageType = 'inbound.targets.chunk';

const chunkIdentity = {
  importJobId: z.string().regex(/^\d+$/),
  sourceSystem: z.string(),
  chunkIndex: z.number().int().min(0),
  chunkCount: z.number().int().min(1),
};

/** A chunk's identity, as its header line carries it (without the item count). */
export type ChunkIdentity = { [K in keyof typeof chunkIdentity]: z.infer<(typeof chunkIdentity)[K]> };

/**
 * The chunk format's version, named by the `message-version` header (1 was never released). A
 * message is the UTF-8 of one line of JSON (the envelope; its payload the chunk's identity and item
 * count), a newline, then one row per item in PostgreSQL's COPY text format (columns
 * `chunkRowColumns`, tab-separated, `\\N` for NULL, each row ending in a newline). PostgreSQL
 * reads the rows with COPY instead of parsing a JSON document of them: about 40% less of its CPU
 * per applied target (src/workers/inbound/sql.ts). The gateway writes them with
 * src/gateway/inbound/chunk-rows.ts.
 */
export const chunkRowsVersion = 2;

/** The columns of a chunk's rows, in order; the worker's staging table has these. */
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

/** The header line of a chunk message. */
export const chunkRowsHeaderSchema = messageSchema(
  chunkMessageType,
  chunkRowsVersion,
  z.object({ ...chunkIdentity, itemCount: z.number().int().min(1) }),
);
