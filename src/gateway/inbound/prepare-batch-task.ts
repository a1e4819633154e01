// Worker-thread entry (piscina) for prepareBatch: an AppError (the client's mistake) comes back
// as data, so the caller answers it like any other; anything else is a failure of the task.
import { Piscina } from 'piscina';
import { AppError } from '../../shared/errors.js';
import { startBulkThread } from '../../shared/bulk-thread.js';
import { prepareBatch, type BatchLimits, type PreparedBatch } from './prepare-batch.js';

export type SerialisedAppError = Pick<AppError, 'code' | 'message' | 'fieldErrors' | 'details' | 'retryAfterSeconds'>;
export type PrepareReply = { ok: true; batch: PreparedBatch } | { ok: false; error: SerialisedAppError };

startBulkThread('batch-parse'); // this module runs in parse threads only

/** Bytes that own their whole ArrayBuffer (small Buffers are slices of a shared pool: copied). */
const owning = (bytes: Uint8Array): Uint8Array =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);

export default function prepareBatchTask(task: { bytes: Uint8Array; limits: BatchLimits }) {
  try {
    const batch = prepareBatch(task.bytes, task.limits);
    const chunks = batch.chunks.map((c) => ({ items: c.items, bytes: owning(c.bytes) }));
    const reply: PrepareReply = { ok: true, batch: { ...batch, chunks } };
    // The chunks (up to the body's size) are handed over, not copied by the event loop.
    return Piscina.move({
      [Piscina.transferableSymbol]: chunks.map((c) => c.bytes.buffer),
      [Piscina.valueSymbol]: reply,
    } as unknown as ArrayBuffer);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const { code, message, fieldErrors, details, retryAfterSeconds } = err;
    // fieldErrors may lack a prototype; a plain copy survives the structured clone.
    return {
      ok: false as const,
      error: { code, message, fieldErrors: fieldErrors && { ...fieldErrors }, details, retryAfterSeconds },
    };
  }
}
