import { AppError } from '../../shared/errors.js';
import { bodyFingerprint } from '../http/fingerprint.js';
import { parseJsonBytes, unstorableByItem } from '../http/json-text.js';
import { parseOrThrow } from '../http/validate.js';
import { cutIntoChunks, type Chunk } from './chunks.js';
import { batchEnvelopeSchema } from './schemas.js';
import { validateTargets } from './validate-targets.js';

export type BatchLimits = { maxTargets: number; chunkMaxBytes: number };

/** A batch ready to record and produce: plain data and bytes, cheap to pass between threads. */
export type PreparedBatch = {
  sourceSystem: string;
  externalBatchId: string | null;
  /** bodyFingerprint of the bytes (see http/fingerprint.ts). */
  requestHash: Buffer;
  received: number;
  accepted: number;
  rejectedCount: number;
  errors: { index: number; externalId: string | null; field: string | null; message: string }[];
  errorsOmitted: number;
  /** The accepted targets as COPY rows, cut into Kafka-sized chunks (see cutIntoChunks). */
  chunks: Chunk[];
};

/**
 * Everything the gateway does to a batch body before it touches PostgreSQL or Kafka: decode,
 * bound, parse, validate target by target (partial acceptance), fingerprint and format into
 * chunks. Pure and CPU-bound, so large batches run it in a worker thread (batch-pool.ts).
 */
export function prepareBatch(bytes: Uint8Array, limits: BatchLimits): PreparedBatch {
  const { value: raw, unstorable } = parseJsonBytes(bytes);
  const items = unstorableByItem(unstorable, 'targets');
  const count = (raw as { targets?: unknown } | null)?.targets;
  if (Array.isArray(count) && count.length > limits.maxTargets) {
    throw new AppError(
      'payload_too_large',
      `A batch holds at most ${limits.maxTargets} targets; this one has ${count.length}.`,
      null,
      { maxTargets: limits.maxTargets, targets: count.length },
    );
  }
  const batch = parseOrThrow(batchEnvelopeSchema, raw, 'body');
  const targets = validateTargets(batch.targets, items);
  return {
    sourceSystem: batch.sourceSystem,
    externalBatchId: batch.externalBatchId ?? null,
    requestHash: bodyFingerprint(bytes),
    received: batch.targets.length,
    accepted: targets.accepted.length,
    rejectedCount: targets.rejectedCount,
    errors: targets.errors,
    errorsOmitted: targets.errorsOmitted,
    chunks: cutIntoChunks(targets.accepted, limits.chunkMaxBytes),
  };
}
