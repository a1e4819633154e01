import { AppError } from '../../shared/errors.js';
import { topicNames } from '../../shared/kafka/topics.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { recordThenProduce, type WriteDeps } from '../edge/record-then-produce.js';
import { toImportJobDto } from '../import-jobs/store.js';
import type { ImportJobDto } from '../import-jobs/schemas.js';
import { chunkMessages } from './chunks.js';
import { findImportJobByKey, insertImportJob } from './store.js';
import type { PreparedBatch } from './prepare-batch.js';

/** A validated request, its accepted targets already serialised and cut into chunks. */
export type IngestRequest = PreparedBatch & {
  kind: 'Single' | 'Batch';
  /** Idempotency-Key header, else externalBatchId, namespaced so the two never collide. */
  idempotencyKey: string | null;
};

export type IngestResult = ImportJobDto & { idempotentReplay: boolean };

/** The import job a replayed key names, as stored. */
type RecordedJob = NonNullable<Awaited<ReturnType<typeof findImportJobByKey>>>;

/**
 * Records the import job and produces its chunks (see recordThenProduce); replays answer the same
 * job when its body's fingerprint is the one recorded, and are a 409 otherwise.
 */
export async function ingestTargets(
  deps: WriteDeps,
  client: AuthenticatedClient,
  ids: { requestId: string; correlationId: string },
  req: IngestRequest,
): Promise<IngestResult> {
  const { chunks } = req;
  const recorded = await recordThenProduce<IngestResult | { replayOf: RecordedJob }>(
    deps,
    client.tenantId,
    async (tx) => {
      const row = await insertImportJob(tx, {
        tenantId: client.tenantId,
        clientId: client.clientId,
        kind: req.kind,
        sourceSystem: req.sourceSystem,
        externalBatchId: req.externalBatchId,
        idempotencyKey: req.idempotencyKey,
        requestHash: req.requestHash,
        received: req.received,
        accepted: req.accepted,
        rejected: req.rejectedCount,
        chunkCount: chunks.length,
        errors: req.errors,
        errorsOmitted: req.errorsOmitted,
      });
      if (!row) return { result: { replayOf: (await findImportJobByKey(tx, client.clientId, req.idempotencyKey!))! } };
      const importJobId = String(row.id);
      const meta = { tenantId: client.tenantId, clientId: client.clientId, ...ids };
      const messages = chunkMessages(importJobId, req.sourceSystem, chunks, meta);
      const topics = topicNames(deps.config.kafka);
      // Small imports take the express lane: the workers never queue them behind a bulk backlog.
      const express = chunks.length === 1 && req.accepted <= deps.config.inbound.expressMaxTargets;
      return {
        result: { ...toImportJobDto(row), idempotentReplay: false },
        produce: {
          topic: express ? topics.inboundTargetsExpress : topics.inboundTargets,
          messages,
          recordId: importJobId,
        },
      };
    },
  );
  if (!('replayOf' in recorded)) return recorded;
  const existing = recorded.replayOf;
  if (!existing.request_hash.equals(req.requestHash)) {
    throw new AppError(
      'idempotency_conflict',
      'This idempotency key was already used with a different body; use a new key for a new request.',
      null,
      { importJobId: Number(existing.id) },
    );
  }
  return { ...toImportJobDto(existing), idempotentReplay: true };
}
