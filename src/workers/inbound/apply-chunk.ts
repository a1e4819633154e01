import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { Pool, PoolClient } from '../../shared/db/pool.js';
import { inTransaction } from '../../shared/db/pool.js';
import { maxStoredItemErrors, type ItemError } from '../../shared/inbound/import-job.js';
import { recordImportJobFinished } from '../../shared/webhooks/events.js';
import { checkItemCount, type ChunkToApply, type FailedChunk } from './decode-chunk.js';
import {
  claimChunk,
  copyRows,
  createStagingTable,
  finishChunk,
  jsonbBinary,
  lockJob,
  upsertStagedTargets,
  upsertTargets,
} from './sql.js';

export type ChunkOutcome = 'applied' | 'duplicate' | 'orphan';

/**
 * Applies one chunk in one transaction: lock the job, claim the chunk in the ledger (a
 * redelivered chunk finds its claim and changes nothing), upsert its targets, count it.
 * A crash anywhere before COMMIT leaves no trace; after it, the claim makes redelivery a no-op.
 * PostgreSQL reads the targets from the message's bytes: a v2 chunk's rows with COPY into the
 * session's staging table, a v1 chunk's JSON as one jsonb parameter. A chunk whose items do not
 * number what it says is refused (permanent) before COMMIT.
 */
export async function applyChunk(
  pool: Pool,
  chunk: ChunkToApply,
  awaitJob: (load: () => Promise<unknown>) => Promise<unknown>,
): Promise<ChunkOutcome> {
  const { header, itemCount } = chunk;
  const { importJobId, chunkIndex, sourceSystem } = header.payload;
  return inTransaction(pool, async (tx) => {
    const job = await awaitJob(async () => (await tx.query(lockJob, [importJobId, header.tenantId])).rows[0] ?? null);
    if (!job) return 'orphan';
    const claimed = await tx.query(claimChunk, [importJobId, chunkIndex, itemCount, 0]);
    if (claimed.rowCount === 0) return 'duplicate';
    const owner = [header.tenantId, sourceSystem, importJobId]; // $1–$3 of either upsert
    if (chunk.format === 'rows') {
      checkItemCount(chunk, await stageRows(tx, chunk.rows));
      await tx.query(upsertStagedTargets, owner);
    } else {
      const upserted = await tx.query<{ item_count: number }>(upsertTargets, [...owner, jsonbBinary(chunk.value)]);
      checkItemCount(chunk, upserted.rows[0]!.item_count);
    }
    const finished = await tx.query(finishChunk, [importJobId, itemCount, 0, null, null, maxStoredItemErrors]);
    await recordImportJobFinished(tx, finished.rows[0]); // import_job.* when this chunk made the job final
    return 'applied';
  });
}

/** COPYs a v2 chunk's rows into this session's staging table; returns how many rows it read. */
async function stageRows(tx: PoolClient, rows: Buffer): Promise<number> {
  await tx.query(createStagingTable);
  const copy = tx.query(copyFrom(copyRows));
  await pipeline(Readable.from([rows]), copy);
  return copy.rowCount;
}

/** Marks a dead-lettered chunk as failed, once: its items count as failed, with the reason. */
export async function failChunk(pool: Pool, chunk: FailedChunk, reason: string): Promise<void> {
  const { header, itemCount, firstIndex, lastIndex } = chunk;
  const { importJobId, chunkIndex } = header.payload;
  await inTransaction(pool, async (tx) => {
    const job = (await tx.query(lockJob, [importJobId, header.tenantId])).rows[0];
    if (!job) return;
    const claimed = await tx.query(claimChunk, [importJobId, chunkIndex, 0, itemCount]);
    if (claimed.rowCount === 0) return;
    const error: ItemError = {
      index: firstIndex,
      externalId: null,
      field: null,
      message: `${itemCount} targets (items ${firstIndex}–${lastIndex}) could not be applied: ${reason}`,
    };
    const finished = await tx.query(finishChunk, [
      importJobId,
      0,
      itemCount,
      JSON.stringify([error]),
      reason,
      maxStoredItemErrors,
    ]);
    await recordImportJobFinished(tx, finished.rows[0]);
  });
}
