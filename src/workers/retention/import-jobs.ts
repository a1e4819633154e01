import type { Pool } from '../../shared/db/pool.js';
import { inPruneBatches } from './batches.js';

/**
 * Deletes import jobs that finished more than `retentionMs` ago, with their chunk ledger and
 * their route drafts, in batches of `batchSize` (issue 51). Only finished jobs (completed_at is
 * set with the final status), so no job a worker may still apply goes; a chunk redelivered after
 * its job went is an orphan to the worker and is dropped after ORPHAN_GRACE_MS, as one whose
 * edge record never committed. The targets the jobs brought stay (their last_import_job_id is a
 * number, not a reference). Rows another transaction holds (a draft being made from the job) are
 * skipped, never waited for. `signal` ends the round between batches (a stopping worker does not
 * wait for a year's backlog). Returns how many jobs went.
 */
export function pruneImportJobs(
  pool: Pool,
  retentionMs: number,
  options: { batchSize?: number; signal?: AbortSignal } = {},
): Promise<number> {
  return inPruneBatches(pool, options, async (tx, batchSize) => {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id FROM import_jobs
        WHERE completed_at < now() - make_interval(secs => $1::double precision / 1000)
        ORDER BY completed_at LIMIT $2
          FOR UPDATE SKIP LOCKED`,
      [retentionMs, batchSize],
    );
    if (rows.length === 0) return 0;
    const ids = rows.map((r) => r.id);
    // The children first: both reference the job.
    await tx.query('DELETE FROM route_suggestions WHERE import_job_id = ANY($1::bigint[])', [ids]);
    await tx.query('DELETE FROM import_job_chunks WHERE import_job_id = ANY($1::bigint[])', [ids]);
    await tx.query('DELETE FROM import_jobs WHERE id = ANY($1::bigint[])', [ids]);
    return ids.length;
  });
}
