// A batch parse thread's task (batch-pool.ts): prepareBatch on a body's bytes; the chunks (up to
// the body's size) are handed over to the event loop, not copied.
import { startBulkThread } from '../../shared/bulk-thread.js';
import { owning, threadTask } from '../../shared/threads.js';
import { prepareBatch, type BatchLimits, type PreparedBatch } from './prepare-batch.js';

startBulkThread('batch-parse'); // this module runs in parse threads only

export default threadTask(
  (task: { bytes: Uint8Array; limits: BatchLimits }): PreparedBatch => {
    const batch = prepareBatch(task.bytes, task.limits);
    return { ...batch, chunks: batch.chunks.map((c) => ({ items: c.items, bytes: owning(c.bytes) })) };
  },
  (batch) => batch.chunks.map((c) => c.bytes.buffer as ArrayBuffer),
);
