import { AppError } from '../../shared/errors.js';
import { ownBuffer, threadPool } from '../../shared/threads.js';
import { prepareBatch, type BatchLimits, type PreparedBatch } from './prepare-batch.js';

/** Bodies this small are prepared on the event loop: a thread hop would cost more than it saves. */
const inlineBelowBytes = 64 * 1024;

export type BatchPreparer = {
  /** Takes the bytes over: a large body's buffer is handed to a thread, so the caller must not read it again. */
  prepare(bytes: Buffer): Promise<PreparedBatch>;
  close(): Promise<void>;
};

/** A parse thread's old generation: parsing a 12.9 MB batch of the largest targets needs 48 MiB
 *  (32 runs out), so six times the largest body leaves room, and caps the garbage a thread keeps
 *  between collections (it counts in the gateway's memory budget: docs/operations.md, "Memory"). */
export const parseThreadHeapMb = (maxBodyBytes: number) => Math.max(64, Math.ceil((6 * maxBodyBytes) / 1048576));

/**
 * Prepares inbound batches (prepareBatch) in worker threads, so a 16 MB batch costs the event loop
 * a copy of its bytes instead of hundreds of milliseconds of parsing and validation: other
 * clients' requests, /livez included, are answered meanwhile. Threads start on first use.
 */
export function createBatchPreparer(limits: BatchLimits, threads: number, maxBodyBytes: number): BatchPreparer {
  const pool = threadPool({
    task: new URL('./prepare-batch-task.js', import.meta.url),
    maxThreads: threads,
    idleTimeoutMs: 60_000,
    heapMb: parseThreadHeapMb(maxBodyBytes),
    errorClasses: [AppError], // the client's mistake, answered like any other
  });
  return {
    async prepare(bytes) {
      if (bytes.length < inlineBelowBytes) return prepareBatch(bytes, limits);
      // Handed over, not copied, when the body owns its memory (the body readers concatenate its
      // chunks into a buffer of its own): the event loop never reads it again.
      const owned = ownBuffer(bytes);
      const batch = await pool.run<PreparedBatch>({ bytes, limits }, { transfer: owned ? [owned] : [] });
      // A Buffer arrives as a plain Uint8Array; PostgreSQL's driver takes Buffers as bytea.
      return { ...batch, requestHash: Buffer.from(batch.requestHash) };
    },
    close: () => pool.close(),
  };
}
