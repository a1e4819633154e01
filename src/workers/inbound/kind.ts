import { topicSpec } from '../../shared/kafka/topics.js';
import { edgeWriterDone } from '../../shared/edge-lock.js';
import { awaitEdgeRecord } from '../edge-record.js';
import { applyEach } from '../permanent-error.js';
import type { WorkerKind } from '../worker-kind.js';
import { applyChunk, failChunk } from './apply-chunk.js';
import { decodeChunk, describeFailedChunk } from './decode-chunk.js';

/** Applies inbound target chunks into `targets` and advances their import jobs. */
export const inboundWorker: WorkerKind = {
  name: 'inbound',
  groupId: 'inbound',
  topics: (config) => [topicSpec(config, 'inboundTargets')],
  async handleBatch(messages, deps, ctx) {
    const log = deps.logger.child({ worker: 'inbound' });
    await applyEach(
      messages,
      ctx,
      async (message) => {
        const chunk = decodeChunk(message);
        const { importJobId, chunkIndex } = chunk.header.payload;
        const outcome = await applyChunk(deps.pool, chunk, (load) =>
          awaitEdgeRecord(
            load,
            chunk.header.producedAt,
            deps.config.orphanGraceMs,
            ctx.heartbeat,
            log,
            `import job ${importJobId}`,
            () => edgeWriterDone(deps.pool, importJobId),
          ),
        );
        deps.metrics?.inboundChunk(outcome);
        if (outcome === 'duplicate' || outcome === 'orphan')
          log.debug({ importJobId, chunk: chunkIndex, outcome }, 'chunk skipped');
      },
      log,
    );
  },
  async onDeadLetter(message, error, deps) {
    const chunk = describeFailedChunk(message);
    if (!chunk) return; // undecodable: no job to mark; the dead-letter topic keeps it
    await failChunk(deps.pool, chunk, error.message);
  },
};
