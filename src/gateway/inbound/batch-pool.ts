import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { AppError } from '../../shared/errors.js';
import { prepareBatch, type BatchLimits, type PreparedBatch } from './prepare-batch.js';
import type { PrepareReply } from './prepare-batch-task.js';

/** Bodies this small are prepared on the event loop: a thread hop would cost more than it saves. */
const inlineBelowBytes = 64 * 1024;

function taskFile(): string {
  const js = new URL('./prepare-batch-task.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return js.href;
  return new URL('./prepare-batch-boot.mjs', import.meta.url).href;
}

export type BatchPreparer = { prepare(bytes: Buffer): Promise<PreparedBatch>; close(): Promise<void> };

/**
 * Prepares inbound batches (prepareBatch) in worker threads, so a 16 MB batch costs the event loop
 * a copy of its bytes instead of hundreds of milliseconds of parsing and validation: other
 * clients' requests, /livez included, are answered meanwhile. Threads start on first use.
 */
/** A parse thread's old generation: parsing a 12.9 MB batch of the largest targets needs 48 MiB
 *  (32 runs out), so six times the largest body leaves room, and caps the garbage a thread keeps
 *  between collections (it counts in the gateway's memory budget: docs/operations.md, "Memory"). */
export const parseThreadHeapMb = (maxBodyBytes: number) => Math.max(64, Math.ceil((6 * maxBodyBytes) / 1048576));

export function createBatchPreparer(limits: BatchLimits, threads: number, maxBodyBytes: number): BatchPreparer {
  let pool: Piscina | null = null;
  return {
    async prepare(bytes) {
      if (bytes.length < inlineBelowBytes) {
        return prepareBatch(bytes, limits);
      }
      const workers = (pool ??= new Piscina({
        filename: taskFile(),
        minThreads: 0,
        maxThreads: threads,
        idleTimeout: 60_000,
        resourceLimits: { maxOldGenerationSizeMb: parseThreadHeapMb(maxBodyBytes) },
      }));
      // The body is copied to the thread, not handed over: it adds nothing to this thread's
      // external memory, whose growth starts full collections of its heap.
      const reply = (await workers.run({ bytes, limits })) as PrepareReply;
      if (!reply.ok) {
        const e = reply.error;
        throw new AppError(e.code, e.message, e.fieldErrors, e.details, e.retryAfterSeconds);
      }
      return {
        ...reply.batch,
        // A Buffer arrives as a plain Uint8Array; PostgreSQL's driver takes Buffers as bytea.
        requestHash: Buffer.from(reply.batch.requestHash),
      };
    },
    async close() {
      await pool?.destroy();
    },
  };
}
