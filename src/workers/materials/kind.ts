import { usageMessageSchema } from '../../shared/materials/usage-message.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { decodeMessage, decodeOrNull } from '../decode.js';
import { applyStamp } from '../apply-stamp.js';
import { edgeWait } from '../edge-record.js';
import type { WorkerKind } from '../worker-kind.js';
import { applyUsage, failUsage } from './apply-usage.js';

/** Books recorded work-order material usages as stock movements and balance changes. */
export const materialsWorker: WorkerKind = {
  name: 'materials',
  groupId: 'materials',
  topics: (kafka) => [topicSpec(kafka, 'workOrderMaterials')],
  async apply(message, deps) {
    const usage = decodeMessage(message, usageMessageSchema);
    const id = usage.payload.materialUsageId;
    const wait = edgeWait(deps, { producedAt: usage.producedAt, recordId: id, what: `material usage ${id}` });
    const stamp = applyStamp(message, usage.producedAt, deps);
    const outcome = await applyUsage({ pool: deps.pool, message: usage, wait, stamp });
    if (outcome !== 'applied')
      deps.logger.debug({ worker: 'materials', materialUsageId: id, outcome }, 'material usage skipped');
  },
  async onDeadLetter(message, error, deps) {
    const usage = decodeOrNull(message, usageMessageSchema);
    if (!usage) return; // no usage to mark; the dead-letter topic keeps the message
    const stamp = applyStamp(message, usage.producedAt, deps);
    await failUsage({ pool: deps.pool, message: usage, reason: error.message, stamp });
  },
};
