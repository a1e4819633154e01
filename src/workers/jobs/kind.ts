import { inTransaction } from '../../shared/db/pool.js';
import { jobMessageSchema } from '../../shared/jobs/job-message.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { recordFieldJobCreated } from '../../shared/webhooks/events.js';
import { decodeMessage, decodeOrNull } from '../decode.js';
import { applyStamp, stampValues } from '../apply-stamp.js';
import { edgeRecordOrWait, edgeWait } from '../edge-record.js';
import type { WorkerKind } from '../worker-kind.js';
import {
  countDuplicateJob,
  insertFieldJob,
  lockJobRequest,
  markFailed,
  markMaterialized,
  upsertWorkOrder,
} from './sql.js';

/**
 * Materialises field jobs and their work orders. Idempotent: the job request row is locked and
 * marked materialised in the same transaction that inserts the job, so a redelivered message
 * (after a crash at any point) finds it done and changes nothing.
 */
export const jobsWorker: WorkerKind = {
  name: 'jobs',
  groupId: 'jobs',
  topics: (kafka) => [topicSpec(kafka, 'jobs')],
  async apply(message, deps) {
    const { tenantId, clientId, producedAt, payload } = decodeMessage(message, jobMessageSchema);
    const { fieldJobId, jobNumber, request: r } = payload;
    await inTransaction(deps.pool, async (tx) => {
      const edge = await edgeRecordOrWait<{ materialized_at: Date | null }>(
        (await tx.query(lockJobRequest, [fieldJobId, tenantId])).rows[0],
        edgeWait(deps, { producedAt, recordId: fieldJobId, what: `field job ${fieldJobId}` }),
      );
      if (!edge) return;
      if (edge.materialized_at) {
        await tx.query(countDuplicateJob, [fieldJobId]);
        return;
      }
      await tx.query(insertFieldJob, [
        fieldJobId,
        tenantId,
        r.externalId,
        jobNumber,
        r.title,
        r.description ?? null,
        r.jobType,
        r.priority ?? 'Normal',
        JSON.stringify(r.customer),
        JSON.stringify(r.site),
        r.requestedTimeWindow?.start ?? null,
        r.requestedTimeWindow?.end ?? null,
        r.expectedDurationMinutes ?? null,
        r.importTargetRef ? JSON.stringify(r.importTargetRef) : null,
        JSON.stringify(r.metadata ?? {}),
      ]);
      await tx.query(upsertWorkOrder, [tenantId, r.externalId, r.title, fieldJobId]);
      await tx.query(markMaterialized, [fieldJobId, ...stampValues(applyStamp(message, producedAt, deps)), 'applied']);
      await recordFieldJobCreated(tx, { tenantId, clientId, fieldJobId }); // webhook, same transaction
    });
  },
  async onDeadLetter(message, error, deps) {
    const job = decodeOrNull(message, jobMessageSchema);
    if (!job) return; // no job to mark; the dead-letter topic keeps the message
    const stamp = stampValues(applyStamp(message, job.producedAt, deps));
    await deps.pool.query(markFailed, [
      job.payload.fieldJobId,
      error.message.slice(0, 1000),
      ...stamp,
      'dead_lettered',
    ]);
  },
};
