import type { Queryable } from '../../src/shared/db/pool.js';

/**
 * A year of one client's import jobs, made in SQL (not through the API: a million requests would
 * take an hour): `jobs` finished jobs, one every 30 s back from now, across three source systems
 * and every final status, so each documented filter has matches deep in the history. The test's
 * and the bench's stand-in for production's import_jobs table. Returns how long it took.
 */
export async function fillImportJobHistory(
  db: Queryable,
  client: { tenantId: string; clientId: string },
  jobs: number,
): Promise<{ ms: number }> {
  const started = performance.now();
  await db.query(
    `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, external_batch_id, idempotency_key,
                              request_hash, status, received_count, accepted_count, rejected_count, applied_count,
                              chunk_count, chunks_done, created_at, updated_at, started_at, completed_at)
     SELECT $1, $2, 'Batch', 'erp-' || (i % 3), 'HIST-' || i, 'hist-' || i, '\\x00'::bytea,
            (ARRAY['Completed', 'Completed', 'Completed', 'CompletedWithErrors', 'Failed'])[1 + i % 5],
            100, 100, 0, CASE WHEN i % 5 = 4 THEN 0 ELSE 100 END, 1, 1, at, at, at, at
       FROM generate_series(1, $3::int) i,
            LATERAL (SELECT now() - make_interval(secs => 30 * ($3::int - i + 1)) AS at) t`,
    [client.tenantId, client.clientId, jobs],
  );
  // As autovacuum leaves a year-old table: statistics, and pages all-visible (index-only counts).
  await db.query('VACUUM ANALYZE import_jobs');
  return { ms: performance.now() - started };
}
