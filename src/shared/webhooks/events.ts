import type { ImportJobStatus } from '../inbound/import-job.js';
import { loadUsages } from '../materials/usage-record.js';
import type { WebhookEventType } from './event-types.js';
import { recordWebhookEvent, type Tx } from './outbox.js';
import { iso } from '../iso-time.js';

// The state changes that raise webhook events, one function each, called by the code that makes
// the change, inside its transaction (so the event exists exactly when the change does). Each
// belongs to the Integration Client that caused the change.

/** The import_jobs row an import_job.* event is made from. */
export type FinishedImportJobRow = {
  id: string | number;
  tenant_id: string;
  client_id: string;
  kind: 'Single' | 'Batch';
  source_system: string;
  external_batch_id: string | null;
  status: ImportJobStatus;
  received_count: number;
  accepted_count: number;
  rejected_count: number;
  applied_count: number;
  failed_count: number;
  failure_reason: string | null;
  created_at: Date;
  completed_at: Date | null;
};

/** FinishedImportJobRow's columns, for a RETURNING clause (workers/inbound/sql.ts); the type keeps them the same. */
export const finishedImportJobColumns = Object.keys({
  id: true,
  tenant_id: true,
  client_id: true,
  kind: true,
  source_system: true,
  external_batch_id: true,
  status: true,
  received_count: true,
  accepted_count: true,
  rejected_count: true,
  applied_count: true,
  failed_count: true,
  failure_reason: true,
  created_at: true,
  completed_at: true,
} satisfies Record<keyof FinishedImportJobRow, true>).join(', ');

/** The final statuses (shared/inbound/import-job.ts) and the event each raises. */
const importJobEventTypes: Partial<Record<ImportJobStatus, WebhookEventType>> = {
  Completed: 'import_job.completed',
  CompletedWithErrors: 'import_job.completed_with_errors',
  Failed: 'import_job.failed',
};

/** import_job.* when the row's status is final (the chunk that finished the job); else nothing. */
export async function recordImportJobFinished(tx: Tx, job: FinishedImportJobRow | undefined): Promise<void> {
  const type = job && importJobEventTypes[job.status];
  if (!job || !type) return;
  await recordWebhookEvent(tx, {
    tenantId: job.tenant_id,
    clientId: job.client_id,
    type: type as 'import_job.completed',
    data: {
      importJobId: Number(job.id),
      kind: job.kind,
      status: job.status as 'Completed',
      sourceSystem: job.source_system,
      externalBatchId: job.external_batch_id,
      counts: {
        received: job.received_count,
        accepted: job.accepted_count,
        rejected: job.rejected_count,
        applied: job.applied_count,
        failed: job.failed_count,
      },
      failureReason: job.failure_reason,
      createdAt: iso(job.created_at),
      completedAt: iso(job.completed_at ?? new Date()),
    },
  });
}

/** field_job.created, for the job the jobs worker just inserted (call after its work order). */
export async function recordFieldJobCreated(
  tx: Tx,
  job: { tenantId: string; clientId: string; fieldJobId: string },
): Promise<void> {
  const { rows } = await tx.query(
    `SELECT j.id, j.job_number, j.external_id, j.status, j.job_type, j.title, j.created_at,
            (SELECT w.id FROM work_orders w WHERE w.field_job_id = j.id) AS work_order_id
       FROM field_jobs j WHERE j.id = $1 AND j.tenant_id = $2`,
    [job.fieldJobId, job.tenantId],
  );
  const r = rows[0];
  if (!r) throw new Error(`field job ${job.fieldJobId} not found for its webhook event`);
  await recordWebhookEvent(tx, {
    tenantId: job.tenantId,
    clientId: job.clientId,
    type: 'field_job.created',
    data: {
      fieldJobId: r.id,
      jobNumber: r.job_number,
      externalId: r.external_id,
      status: r.status,
      workOrderId: r.work_order_id,
      jobType: r.job_type,
      title: r.title,
      createdAt: iso(r.created_at),
    },
  });
}

/**
 * work_order.materials_recorded, for a usage the materials worker just booked (call after
 * marking it Applied, in the same transaction). The usage's client gets it.
 */
export async function recordMaterialsRecorded(tx: Tx, materialUsageId: string): Promise<void> {
  const { rows } = await tx.query('SELECT tenant_id, client_id FROM material_usages WHERE id = $1', [materialUsageId]);
  const r = rows[0];
  const [usage] = r ? await loadUsages(tx, r.tenant_id, { usageId: materialUsageId }) : [];
  if (usage?.status !== 'Applied' || !usage.appliedAt)
    throw new Error(`material usage ${materialUsageId} not found Applied for its webhook event`);
  await recordWebhookEvent(tx, {
    tenantId: r.tenant_id,
    clientId: r.client_id,
    type: 'work_order.materials_recorded',
    data: { ...usage, status: usage.status, appliedAt: usage.appliedAt },
  });
}

/**
 * appointment_request.status_changed, for one status change of a request (call with each history
 * entry whose from is not null, in the same transaction). The submitting client gets it.
 */
export async function recordAppointmentStatusChanged(
  tx: Tx,
  change: { id: string; from: string | null; to: string; reason: string | null; actor: string; at: Date },
): Promise<void> {
  if (change.from === null) return; // the submission itself: the client made it and got the answer
  const { rows } = await tx.query(
    'SELECT tenant_id, client_id, external_reference FROM appointment_requests WHERE id = $1',
    [change.id],
  );
  const r = rows[0];
  if (!r) throw new Error(`appointment request ${change.id} not found for its webhook event`);
  await recordWebhookEvent(tx, {
    tenantId: r.tenant_id,
    clientId: r.client_id,
    type: 'appointment_request.status_changed',
    data: {
      appointmentRequestId: change.id,
      externalReference: r.external_reference,
      fromStatus: change.from,
      toStatus: change.to,
      reason: change.reason,
      actor: change.actor as 'client',
      changedAt: iso(change.at),
    },
  });
}
