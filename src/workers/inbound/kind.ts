import { isReplayed } from '../../shared/dead-letters/headers.js';
import { topicSpec, type TopicName } from '../../shared/kafka/topics.js';
import { applyStamp } from '../apply-stamp.js';
import { edgeWait } from '../edge-record.js';
import type { WorkerKind } from '../worker-kind.js';
import { applyChunk, failChunk } from './apply-chunk.js';
import { decodeChunk, describeFailedChunk } from './decode-chunk.js';

/**
 * Applies inbound target chunks into `targets` and advances their import jobs. Two kinds apply
 * them the same way: `inbound` the bulk topic, `inbound-express` the small imports' topic (see
 * INBOUND_EXPRESS_MAX_TARGETS). The express kind has its own consumer group, fetch, queue and
 * apply slots (and, deployed as its own process, its own event loop and CPU share), so a small
 * import never waits behind a bulk backlog's fetches or applies.
 */
const chunkKind = (name: string, topic: TopicName): WorkerKind => ({
  name,
  groupId: name,
  topics: (kafka) => [topicSpec(kafka, topic)],
  async apply(message, deps) {
    const chunk = decodeChunk(message);
    const { importJobId, chunkIndex } = chunk.header.payload;
    const wait = edgeWait(deps, {
      producedAt: chunk.header.producedAt,
      recordId: importJobId,
      what: `import job ${importJobId}`,
    });
    // A replayed dead letter may take its chunk out of the failed count (apply-chunk.ts).
    const revive = isReplayed(message) ? describeFailedChunk(message) : null;
    const stamp = applyStamp(message, chunk.header.producedAt, deps);
    const outcome = await applyChunk({ pool: deps.pool, chunk, wait, stamp, revive });
    deps.metrics.inboundChunk(outcome);
    if (outcome === 'duplicate' || outcome === 'orphan')
      deps.logger.debug({ worker: name, importJobId, chunk: chunkIndex, outcome }, 'chunk skipped');
  },
  async onDeadLetter(message, error, deps) {
    const chunk = describeFailedChunk(message);
    if (!chunk) return; // undecodable: no job to mark; the dead-letter topic keeps it
    const stamp = applyStamp(message, chunk.header.producedAt, deps);
    await failChunk({ pool: deps.pool, chunk, reason: error.message, stamp });
  },
});

export const inboundWorker = chunkKind('inbound', 'inboundTargets');
export const inboundExpressWorker = chunkKind('inbound-express', 'inboundTargetsExpress');
