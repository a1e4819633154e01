import type { Pool } from '../db/pool.js';
import type { DeadLetter } from './decode.js';
import type { RecordType } from './kinds.js';

// The current state of the record a dead letter belongs to, as `show` reports it. Each statement
// takes the record's id ($1) and tenant ($2; an import job also its chunk, $3): a dead letter never shows another tenant's record.

const statements: Record<RecordType, string> = {
  importJob: `
    SELECT j.status, j.chunk_count AS "chunkCount", j.chunks_done AS "chunksDone", j.accepted_count AS accepted,
           j.applied_count AS applied, j.failed_count AS failed, j.failure_reason AS "failureReason",
           (SELECT json_build_object('appliedCount', c.applied_count, 'failedCount', c.failed_count, 'doneAt', c.done_at)
              FROM import_job_chunks c WHERE c.import_job_id = j.id AND c.chunk_index = $3) AS chunk
      FROM import_jobs j WHERE j.id = $1::bigint AND j.tenant_id = $2`,
  fieldJob: `
    SELECT CASE WHEN failed_at IS NOT NULL THEN 'Failed' WHEN materialized_at IS NOT NULL THEN 'Materialized'
                ELSE 'Pending' END AS status,
           job_number AS "jobNumber", materialized_at AS "materializedAt", failed_at AS "failedAt",
           failure_reason AS "failureReason"
      FROM job_requests WHERE field_job_id = $1::uuid AND tenant_id = $2`,
  materialUsage: `
    SELECT status, failure_reason AS "failureReason", applied_at AS "appliedAt"
      FROM material_usages WHERE id = $1::uuid AND tenant_id = $2`,
  appointmentRequest: `
    SELECT status, status_reason AS "statusReason", updated_at AS "updatedAt"
      FROM appointment_requests WHERE id = $1 AND tenant_id = $2`,
};

const idPatterns: Record<RecordType, RegExp> = {
  importJob: /^\d{1,18}$/,
  fieldJob: /^[0-9a-f-]{36}$/i,
  materialUsage: /^[0-9a-f-]{36}$/i,
  appointmentRequest: /^apr_[0-9A-Z]{26}$/,
};

/** The record's state now; null when the dead letter names none, or it does not exist (any more). */
export async function recordState(pool: Pool, d: DeadLetter): Promise<Record<string, unknown> | null> {
  if (!d.record || !d.tenantId || !idPatterns[d.record.type].test(d.record.id)) return null;
  const chunk = d.record.type === 'importJob' ? [d.record.chunkIndex ?? null] : [];
  const { rows } = await pool.query(statements[d.record.type], [d.record.id, d.tenantId, ...chunk]);
  return rows[0] ?? null;
}
