import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import { inTransaction, type PoolClient } from '../../shared/db/pool.js';
import { recordImportJobFinished } from '../../shared/webhooks/events.js';
import type { InboundChunkOutcome } from '../worker-metrics.js';
import { stampValues } from '../apply-stamp.js';
import { edgeRecordOrWait } from '../edge-record.js';
import type { ApplyArgs, FailArgs } from '../worker-kind.js';
import { CopyFirstPolicy } from './copy-first.js';
import { checkItemCount, type ChunkToApply, type FailedChunk } from './decode-chunk.js';
import { withOwnerColumns } from './owner-columns.js';
import {
  copyNewTargets,
  copyRows,
  countDuplicateChunk,
  createStagingTable,
  finishChunk,
  finishChunkValues,
  finishRevivedChunk,
  lockJobAndClaimChunk,
  reviveChunk,
  upsertStagedTargets,
} from './sql.js';

/** One per worker process: what it learnt about which sources send new targets. */
const processCopyFirst = new CopyFirstPolicy();
type CopyFirst = Pick<CopyFirstPolicy, 'shouldTry' | 'missed'>;

/**
 * Applies one chunk in one transaction: lock the job and claim the chunk in the ledger (a
 * redelivered chunk finds its claim and changes nothing), write its targets, count it.
 * A crash anywhere before COMMIT leaves no trace; after it, the claim makes redelivery a no-op.
 * PostgreSQL reads the chunk's rows with COPY: straight into `targets` when they are all new,
 * else into the session's staging table and then one upsert. A chunk whose items do not number
 * what it says is refused (permanent) before COMMIT.
 *
 * `revive` (a dead letter an operator replayed, as describeFailedChunk reads it): a chunk the
 * ledger counts failed is applied after all, and its items move from failed to applied
 * (finishRevivedChunk); a final job whose status changes raises its import_job.* event again.
 */
export async function applyChunk(
  args: ApplyArgs & { chunk: ChunkToApply; copyFirst?: CopyFirst; revive?: FailedChunk | null },
): Promise<InboundChunkOutcome> {
  const { pool, chunk, wait, stamp, copyFirst = processCopyFirst, revive = null } = args;
  const { header, itemCount } = chunk;
  const { importJobId, chunkIndex, sourceSystem } = header.payload;
  return inTransaction(pool, async (tx) => {
    const claim = [importJobId, header.tenantId, chunkIndex, itemCount, 0, ...stampValues(stamp)];
    const job = await edgeRecordOrWait((await tx.query(lockJobAndClaimChunk, claim)).rows[0], wait);
    if (!job) return 'orphan';
    const revived =
      !job.claimed &&
      revive !== null &&
      (await tx.query(reviveChunk, [importJobId, chunkIndex, itemCount])).rowCount === 1;
    if (!job.claimed && !revived) {
      await tx.query(countDuplicateChunk, [importJobId, chunkIndex]);
      return 'duplicate';
    }
    let outcome: InboundChunkOutcome = 'upserted';
    if (copyFirst.shouldTry(header.tenantId, sourceSystem) && (await copyNewTargetsIn(tx, chunk, copyFirst))) {
      outcome = 'copied';
    } else {
      checkItemCount(chunk, await stageRows(tx, chunk.rows));
      await tx.query(upsertStagedTargets, [header.tenantId, sourceSystem, importJobId]);
    }
    if (revived) {
      const finished = await tx.query(finishRevivedChunk, [importJobId, itemCount, failedChunkError(revive!)]);
      if (finished.rows[0].status !== job.status) await recordImportJobFinished(tx, finished.rows[0]);
      return outcome;
    }
    const finished = await tx.query(
      finishChunk,
      finishChunkValues({ importJobId, chunkIndex, applied: itemCount, failed: 0, how: outcome }),
    );
    await recordImportJobFinished(tx, finished.rows[0]); // import_job.* when this chunk made the job final
    return outcome;
  });
}

// Why a COPY straight into `targets` fails when the chunk is sound but not all new: a target
// exists (or the chunk names one twice); a concurrent chunk inserting the same new targets in
// another order (the upsert locks them in external-id order, COPY in item order).
const notAllNew = new Set(['23505', '40P01']);

/**
 * Tries a chunk as new targets (copyNewTargets, sql.ts) under a savepoint: true when COPY took
 * them all; false, with nothing written, when one was not new. Any other failure (a row that does
 * not parse, a wrong item count) is the chunk's own and is thrown as before.
 */
async function copyNewTargetsIn(tx: PoolClient, chunk: ChunkToApply, copyFirst: CopyFirst): Promise<boolean> {
  const { tenantId, payload } = chunk.header;
  const rows = withOwnerColumns(chunk.rows, { tenantId, ...payload });
  try {
    // The savepoint (released by COMMIT) goes in the COPY's own Query message: no round trip of its own.
    const copy = tx.query(copyFrom(`SAVEPOINT copy_new_targets; ${copyNewTargets}`));
    await pipeline(Readable.from([rows]), copy);
    checkItemCount(chunk, copy.rowCount);
    return true;
  } catch (err) {
    if (!notAllNew.has((err as { code?: unknown } | null)?.code as string)) throw err;
    await tx.query('ROLLBACK TO SAVEPOINT copy_new_targets');
    copyFirst.missed(tenantId, payload.sourceSystem);
    return false;
  }
}

/** COPYs a chunk's rows into this session's staging table, made first if missing (in the same
 *  Query message as the COPY); returns how many rows it read. */
async function stageRows(tx: PoolClient, rows: Buffer): Promise<number> {
  const copy = tx.query(copyFrom(`${createStagingTable}; ${copyRows}`));
  await pipeline(Readable.from([rows]), copy);
  return copy.rowCount;
}

/** How the item error of a failed chunk begins (a revived chunk's is found by it). */
const failedChunkError = ({ itemCount, firstIndex, lastIndex }: FailedChunk) =>
  `${itemCount} targets (items ${firstIndex}–${lastIndex}) could not be applied:`;

/** Marks a dead-lettered chunk as failed, once: its items count as failed, with the reason. */
export async function failChunk({ pool, chunk, reason, stamp }: FailArgs & { chunk: FailedChunk }): Promise<void> {
  const { header, itemCount, firstIndex } = chunk;
  const { importJobId, chunkIndex } = header.payload;
  await inTransaction(pool, async (tx) => {
    const claim = [importJobId, header.tenantId, chunkIndex, 0, itemCount, ...stampValues(stamp)];
    const job = (await tx.query(lockJobAndClaimChunk, claim)).rows[0];
    if (!job?.claimed) return;
    const itemError = {
      index: firstIndex,
      externalId: null,
      field: null,
      message: `${failedChunkError(chunk)} ${reason}`,
    };
    const finished = await tx.query(
      finishChunk,
      finishChunkValues({
        importJobId,
        chunkIndex,
        applied: 0,
        failed: itemCount,
        itemError,
        failureReason: reason,
        how: 'dead_lettered',
      }),
    );
    await recordImportJobFinished(tx, finished.rows[0]);
  });
}
