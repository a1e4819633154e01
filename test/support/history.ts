import type { Queryable } from '../../src/shared/db/pool.js';

/**
 * A year of one client's import jobs, made in SQL (not through the API: a million requests would
 * take an hour): `jobs` finished jobs, one every 30 s back from now, across three source systems
 * and every final status, so each documented filter has matches deep in the history. The test's
 * and the bench's stand-in for production's import_jobs table. Returns how long it took.
 * Options: `chunks`, each job's one chunk in import_job_chunks too (its ledger row, as the worker
 * leaves it); `vacuum` (default true), VACUUM ANALYZE import_jobs afterwards (a caller filling
 * many clients does it once at the end).
 */
export async function fillImportJobHistory(
  db: Queryable,
  client: { tenantId: string; clientId: string },
  jobs: number,
  { chunks = false, vacuum = true }: { chunks?: boolean; vacuum?: boolean } = {},
): Promise<{ ms: number }> {
  const started = performance.now();
  const insertJobs = `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, external_batch_id, idempotency_key,
                              request_hash, status, received_count, accepted_count, rejected_count, applied_count,
                              failed_count, chunk_count, chunks_done, created_at, updated_at, started_at, completed_at)
     SELECT $1, $2, 'Batch', 'erp-' || (i % 3), 'HIST-' || i, 'hist-' || i, '\\x00'::bytea,
            (ARRAY['Completed', 'Completed', 'Completed', 'CompletedWithErrors', 'Failed'])[1 + i % 5],
            100, 100, 0, CASE WHEN i % 5 = 4 THEN 0 ELSE 100 END, CASE WHEN i % 5 = 4 THEN 100 ELSE 0 END,
            1, 1, at, at, at, at
       FROM generate_series(1, $3::int) i,
            LATERAL (SELECT now() - make_interval(secs => 30 * ($3::int - i + 1)) AS at) t`;
  await db.query(
    chunks
      ? `WITH jobs AS (${insertJobs} RETURNING id, tenant_id, applied_count, failed_count, completed_at)
         INSERT INTO import_job_chunks (import_job_id, tenant_id, chunk_index, applied_count, failed_count, done_at,
                                        kafka_topic, kafka_partition, kafka_offset, produced_at, handled_by, how)
         SELECT id, tenant_id, 0, applied_count, failed_count, completed_at, 'inbound.targets', id % 12, id,
                completed_at, 'worker-1', CASE WHEN applied_count = 0 THEN 'dead_lettered' ELSE 'copied' END
           FROM jobs`
      : insertJobs,
    [client.tenantId, client.clientId, jobs],
  );
  // As autovacuum leaves a year-old table: statistics, and pages all-visible (index-only counts).
  if (vacuum) await db.query(chunks ? 'VACUUM ANALYZE import_jobs, import_job_chunks' : 'VACUUM ANALYZE import_jobs');
  return { ms: performance.now() - started };
}
