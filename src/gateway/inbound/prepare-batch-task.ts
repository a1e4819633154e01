// Worker-thread entry (piscina) for prepareBatch: an AppError (the client's mistake) comes back
// as data, so the caller answers it like any other; anything else is a failure of the task.
import { AppError } from '../../shared/errors.js';
import { prepareBatch, type BatchLimits, type PreparedBatch } from './prepare-batch.js';

export type SerialisedAppError = Pick<AppError, 'code' | 'message' | 'fieldErrors' | 'details' | 'retryAfterSeconds'>;
export type PrepareReply = { ok: true; batch: PreparedBatch } | { ok: false; error: SerialisedAppError };

export default function prepareBatchTask(task: { bytes: Uint8Array; limits: BatchLimits }): PrepareReply {
  try {
    return { ok: true, batch: prepareBatch(task.bytes, task.limits) };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const { code, message, fieldErrors, details, retryAfterSeconds } = err;
    // fieldErrors may lack a prototype; a plain copy survives the structured clone.
    return {
      ok: false,
      error: { code, message, fieldErrors: fieldErrors && { ...fieldErrors }, details, retryAfterSeconds },
    };
  }
}
