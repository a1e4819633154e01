import { inTransaction } from '../../shared/db/pool.js';
import { jobMessageSchema } from '../../shared/jobs/job-message.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { recordFieldJobCreated } from '../../shared/webhooks/events.js';
import { decodeMessage } from '../decode.js';
import { edgeWriterDone } from '../../shared/edge-lock.js';
import { awaitEdgeRecord } from '../edge-record.js';
import { applyEach } from '../permanent-error.js';
import type { WorkerKind } from '../worker-kind.js';
import { insertFieldJob, lockJobRequest, markFailed, markMaterialized, upsertWorkOrder } from './sql.js';

/**
 * Materialises field jobs and their work orders. Idempotent: the job request row is locked and
 * marked materialised in the same transaction that inserts the job, so a redelivered message
 * (after a crash at any point) finds it done and changes nothing.
 */
export const jobsWorker: WorkerKind = {
  name: 'jobs',
  groupId: 'jobs',
  topics: (config) => [topicSpec(config, 'jobs')],
  async handleBatch(messages, deps, ctx) {
    const log = deps.logger.child({ worker: 'jobs' });
    await applyEach(
      messages,
      ctx,
      async (message) => {
        const { tenantId, clientId, producedAt, payload } = decodeMessage(message, jobMessageSchema);
        const { fieldJobId, jobNumber, request: r } = payload;
        await inTransaction(deps.pool, async (tx) => {
          const edge = await awaitEdgeRecord(
            async () => (await tx.query(lockJobRequest, [fieldJobId, tenantId])).rows[0] ?? null,
            producedAt,
            deps.config.orphanGraceMs,
            ctx.heartbeat,
            log,
            `field job ${fieldJobId}`,
            () => edgeWriterDone(deps.pool, fieldJobId),
          );
          if (!edge || edge.materialized_at) return;
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
          await tx.query(markMaterialized, [fieldJobId]);
          await recordFieldJobCreated(tx, { tenantId, clientId, fieldJobId }); // webhook, same transaction
        });
      },
      log,
    );
  },
  async onDeadLetter(message, error, deps) {
    let fieldJobId: string;
    try {
      fieldJobId = decodeMessage(message, jobMessageSchema).payload.fieldJobId;
    } catch {
      return; // undecodable: no request to mark; the dead-letter topic keeps it
    }
    await deps.pool.query(markFailed, [fieldJobId, error.message.slice(0, 1000)]);
  },
};
