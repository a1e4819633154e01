import { AppError } from '../../shared/errors.js';
import { topicNames } from '../../shared/kafka/topics.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { recordThenProduce, type WriteDeps } from '../edge/record-then-produce.js';
import { toImportJobDto } from '../import-jobs/store.js';
import type { ImportJobDto } from '../import-jobs/schemas.js';
import { chunkMessages, cutIntoChunks } from './chunks.js';
import { findImportJobByKey, insertImportJob } from './store.js';
import type { ValidatedTargets } from './validate-targets.js';

export type IngestRequest = {
  kind: 'Single' | 'Batch';
  sourceSystem: string;
  externalBatchId: string | null;
  /** Idempotency-Key header, else externalBatchId, namespaced so the two never collide. */
  idempotencyKey: string | null;
  requestHash: Buffer;
  received: number;
  targets: ValidatedTargets;
};

export type IngestResult = ImportJobDto & { idempotentReplay: boolean };

/** Records the import job and produces its chunks (see recordThenProduce); replays answer the same job. */
export function ingestTargets(
  deps: WriteDeps,
  client: AuthenticatedClient,
  ids: { requestId: string; correlationId: string },
  req: IngestRequest,
): Promise<IngestResult> {
  const chunks = cutIntoChunks(req.targets.accepted, deps.config.inboundChunkMaxBytes);
  return recordThenProduce<IngestResult>(deps, async (tx) => {
    const row = await insertImportJob(tx, {
      tenantId: client.tenantId,
      clientId: client.clientId,
      kind: req.kind,
      sourceSystem: req.sourceSystem,
      externalBatchId: req.externalBatchId,
      idempotencyKey: req.idempotencyKey,
      requestHash: req.requestHash,
      received: req.received,
      accepted: req.targets.accepted.length,
      rejected: req.targets.rejectedCount,
      chunkCount: chunks.length,
      errors: req.targets.errors,
      errorsOmitted: req.targets.errorsOmitted,
    });
    if (!row) {
      const existing = (await findImportJobByKey(tx, client.clientId, req.idempotencyKey!))!;
      if (!existing.request_hash.equals(req.requestHash)) {
        throw new AppError(
          'idempotency_conflict',
          'This idempotency key was already used with a different body; use a new key for a new request.',
          null,
          { importJobId: Number(existing.id) },
        );
      }
      return { result: { ...toImportJobDto(existing), idempotentReplay: true } };
    }
    const importJobId = String(row.id);
    const meta = { tenantId: client.tenantId, clientId: client.clientId, ...ids };
    const messages = chunkMessages(importJobId, req.sourceSystem, chunks, meta);
    return {
      result: { ...toImportJobDto(row), idempotentReplay: false },
      produce: { topic: topicNames(deps.config).inboundTargets, messages },
    };
  });
}
