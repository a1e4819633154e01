import { inTransaction, type Pool, type PoolClient } from '../../shared/db/pool.js';

/** Rows one prune statement deletes at most: a short transaction each. */
export const pruneBatchSize = 1000;
/** How long one batch may take (SET LOCAL statement_timeout): a batch, never a table scan's worth. */
const batchStatementTimeoutMs = 30_000;

/**
 * Runs `deleteBatch` (it deletes at most `batchSize` rows and says how many) each in a transaction
 * of its own under the batch statement timeout, until a batch deletes fewer than `batchSize` or
 * `signal` aborts (between batches: a stopping worker does not wait for a year's backlog).
 * Returns how many rows went.
 */
export async function inPruneBatches(
  pool: Pool,
  { batchSize = pruneBatchSize, signal }: { batchSize?: number; signal?: AbortSignal },
  deleteBatch: (tx: PoolClient, batchSize: number) => Promise<number>,
): Promise<number> {
  let pruned = 0;
  while (!signal?.aborted) {
    const n = await inTransaction(pool, async (tx) => {
      await tx.query(`SET LOCAL statement_timeout = ${batchStatementTimeoutMs}`);
      return deleteBatch(tx, batchSize);
    });
    pruned += n;
    if (n < batchSize) break;
  }
  return pruned;
}
