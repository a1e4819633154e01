import type { Pool } from '../../shared/db/pool.js';
import { inTransaction } from '../../shared/db/pool.js';
import type { ChunkPayload } from '../../shared/inbound/chunk-message.js';
import { maxStoredItemErrors, type ItemError } from '../../shared/inbound/import-job.js';
import type { Envelope } from '../../shared/messages.js';
import { recordImportJobFinished } from '../../shared/webhooks/events.js';
import { checkItemCount, type ChunkToApply } from './decode-chunk.js';
import { claimChunk, finishChunk, jsonbBinary, lockJob, upsertTargets } from './sql.js';

type Chunk = Envelope<ChunkPayload>;
export type ChunkOutcome = 'applied' | 'duplicate' | 'orphan';

/**
 * Applies one chunk in one transaction: lock the job, claim the chunk in the ledger (a
 * redelivered chunk finds its claim and changes nothing), upsert its targets, count it.
 * A crash anywhere before COMMIT leaves no trace; after it, the claim makes redelivery a no-op.
 * PostgreSQL reads the targets from the message's bytes; a chunk whose items do not number what
 * it says is refused (permanent) before COMMIT.
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
    const upserted = await tx.query<{ item_count: number }>(upsertTargets, [
      header.tenantId,
      sourceSystem,
      importJobId,
      jsonbBinary(chunk.value),
    ]);
    checkItemCount(chunk, upserted.rows[0]!.item_count);
    const finished = await tx.query(finishChunk, [importJobId, itemCount, 0, null, null, maxStoredItemErrors]);
    await recordImportJobFinished(tx, finished.rows[0]); // import_job.* when this chunk made the job final
    return 'applied';
  });
}

/** Marks a dead-lettered chunk as failed, once: its items count as failed, with the reason. */
export async function failChunk(pool: Pool, chunk: Chunk, reason: string): Promise<void> {
  const { importJobId, chunkIndex, items } = chunk.payload;
  await inTransaction(pool, async (tx) => {
    const job = (await tx.query(lockJob, [importJobId, chunk.tenantId])).rows[0];
    if (!job) return;
    const claimed = await tx.query(claimChunk, [importJobId, chunkIndex, 0, items.length]);
    if (claimed.rowCount === 0) return;
    const error: ItemError = {
      index: items[0]!.index,
      externalId: null,
      field: null,
      message: `${items.length} targets (items ${items[0]!.index}–${items.at(-1)!.index}) could not be applied: ${reason}`,
    };
    const finished = await tx.query(finishChunk, [
      importJobId,
      0,
      items.length,
      JSON.stringify([error]),
      reason,
      maxStoredItemErrors,
    ]);
    await recordImportJobFinished(tx, finished.rows[0]);
  });
}
