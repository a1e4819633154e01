import { usageMessageSchema } from '../../shared/materials/usage-message.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { decodeMessage } from '../decode.js';
import { edgeWriterDone } from '../../shared/edge-lock.js';
import { awaitEdgeRecord } from '../edge-record.js';
import { applyEach } from '../permanent-error.js';
import type { WorkerKind } from '../worker-kind.js';
import { applyUsage, failUsage } from './apply-usage.js';

/** Books recorded work-order material usages as stock movements and balance changes. */
export const materialsWorker: WorkerKind = {
  name: 'materials',
  groupId: 'materials',
  topics: (config) => [topicSpec(config, 'workOrderMaterials')],
  async handleBatch(messages, deps, ctx) {
    const log = deps.logger.child({ worker: 'materials' });
    await applyEach(
      messages,
      ctx,
      async (message) => {
        const usage = decodeMessage(message, usageMessageSchema);
        const outcome = await applyUsage(deps.pool, usage, (load) =>
          awaitEdgeRecord(
            load,
            usage.producedAt,
            deps.config.orphanGraceMs,
            ctx.heartbeat,
            log,
            `material usage ${usage.payload.materialUsageId}`,
            () => edgeWriterDone(deps.pool, usage.payload.materialUsageId),
          ),
        );
        if (outcome !== 'applied')
          log.debug({ materialUsageId: usage.payload.materialUsageId, outcome }, 'material usage skipped');
      },
      log,
    );
  },
  async onDeadLetter(message, error, deps) {
    let usage;
    try {
      usage = decodeMessage(message, usageMessageSchema);
    } catch {
      return; // undecodable: no usage to mark; the dead-letter topic keeps it
    }
    await failUsage(deps.pool, usage, error.message);
  },
};
