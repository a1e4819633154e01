import { isReplayed } from '../../shared/dead-letters/headers.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { applyStamp } from '../apply-stamp.js';
import { edgeWait } from '../edge-record.js';
import type { WorkerKind } from '../worker-kind.js';
import { applyChunk, failChunk } from './apply-chunk.js';
import { decodeChunk, describeFailedChunk } from './decode-chunk.js';

/**
 * Applies inbound target chunks into `targets` and advances their import jobs. Small imports come
 * on their own topic, the express lane (see INBOUND_EXPRESS_MAX_TARGETS and fair-queue.ts).
 */
export const inboundWorker: WorkerKind = {
  name: 'inbound',
  groupId: 'inbound',
  topics: (kafka) => [
    topicSpec(kafka, 'inboundTargets'),
    { ...topicSpec(kafka, 'inboundTargetsExpress'), lane: 'express' },
  ],
  async apply(message, deps) {
    const chunk = decodeChunk(message);
    const { importJobId, chunkIndex } = chunk.header.payload;
    const wait = edgeWait(deps, chunk.header.producedAt, importJobId, `import job ${importJobId}`);
    // A replayed dead letter may take its chunk out of the failed count (apply-chunk.ts).
    const revive = isReplayed(message) ? describeFailedChunk(message) : null;
    const stamp = applyStamp(message, chunk.header.producedAt, deps);
    const outcome = await applyChunk(deps.pool, chunk, wait, stamp, undefined, revive);
    deps.metrics?.inboundChunk(outcome);
    if (outcome === 'duplicate' || outcome === 'orphan')
      deps.logger.debug({ worker: 'inbound', importJobId, chunk: chunkIndex, outcome }, 'chunk skipped');
  },
  async onDeadLetter(message, error, deps) {
    const chunk = describeFailedChunk(message);
    if (!chunk) return; // undecodable: no job to mark; the dead-letter topic keeps it
    await failChunk(deps.pool, chunk, error.message, applyStamp(message, chunk.header.producedAt, deps));
  },
};
