// Statements of the jobs worker.
import { countDuplicate, stampAssignments } from '../apply-stamp.js';

export const lockJobRequest = `
  SELECT field_job_id, materialized_at FROM job_requests WHERE field_job_id = $1 AND tenant_id = $2 FOR UPDATE`;

export const insertFieldJob = `
  INSERT INTO field_jobs (id, tenant_id, external_id, job_number, title, description, job_type, priority, customer,
                          site, window_start, window_end, expected_duration_minutes, import_target, metadata)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
  ON CONFLICT (id) DO NOTHING`;

/** The job's work order (external id = the job's); an existing unlinked one of that id is linked. */
export const upsertWorkOrder = `
  INSERT INTO work_orders (tenant_id, external_work_order_id, title, field_job_id) VALUES ($1, $2, $3, $4)
  ON CONFLICT (tenant_id, external_work_order_id) DO UPDATE SET field_job_id = EXCLUDED.field_job_id
  WHERE work_orders.field_job_id IS NULL`;

/** Also takes a request out of its failed state: a replayed dead letter materialises it after all. $2… the message's stamp (apply-stamp.ts). */
export const markMaterialized = `
  UPDATE job_requests SET materialized_at = now(), failed_at = NULL, failure_reason = NULL, ${stampAssignments(2)}
   WHERE field_job_id = $1`;

export const countDuplicateJob = countDuplicate('job_requests', 'field_job_id');

/** A dead-lettered creation: the request is marked failed, unless it was materialised after all; $3… the stamp. */
export const markFailed = `
  UPDATE job_requests SET failed_at = now(), failure_reason = $2, ${stampAssignments(3)}
   WHERE field_job_id = $1 AND materialized_at IS NULL AND failed_at IS NULL`;
