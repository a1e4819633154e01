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
 * a buffer hand-over instead of hundreds of milliseconds of parsing and validation: other
 * clients' requests, /livez included, are answered meanwhile. Threads start on first use.
 */
export function createBatchPreparer(limits: BatchLimits, threads: number): BatchPreparer {
  let pool: Piscina | null = null;
  return {
    async prepare(bytes) {
      if (bytes.length < inlineBelowBytes) return prepareBatch(bytes, limits);
      pool ??= new Piscina({ filename: taskFile(), minThreads: 0, maxThreads: threads, idleTimeout: 60_000 });
      // The body is handed over to the thread when it owns its memory (it is not read here again).
      const owns = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      const reply = (await pool.run(
        { bytes, limits },
        owns ? { transferList: [bytes.buffer as ArrayBuffer] } : {},
      )) as PrepareReply;
      // A Buffer arrives as a plain Uint8Array; PostgreSQL's driver takes Buffers as bytea.
      if (reply.ok) return { ...reply.batch, requestHash: Buffer.from(reply.batch.requestHash) };
      const e = reply.error;
      throw new AppError(e.code, e.message, e.fieldErrors, e.details, e.retryAfterSeconds);
    },
    async close() {
      await pool?.destroy();
    },
  };
}
