import { inboundTargetSchema } from '../../shared/inbound/target-schema.js';
import { bodyFingerprint } from '../http/fingerprint.js';
import { idempotencyKeyOf } from '../http/idempotency-key.js';
import { parseOrThrow } from '../http/validate.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { ingestTargets, type IngestRequest } from './ingest.js';
import type { BatchPreparer } from './batch-pool.js';
import { cutIntoChunks } from './chunks.js';
import { inboundImportResultSchema, inboundTargetBatchSchema } from './schemas.js';
import type { WriteDeps } from '../edge/record-then-produce.js';

const idempotencyDescription =
  'Idempotency: send an Idempotency-Key header (1–200 visible ASCII characters; for a batch, externalBatchId ' +
  'serves when the header is absent). The same key with the same body (byte for byte) answers 200 with the same ' +
  'import job (idempotentReplay=true, current status) and queues nothing again; the same key with a different ' +
  'body, even the same JSON written differently, is a 409. ' +
  'Keys are kept as long as the import job: until IMPORT_JOB_RETENTION_DAYS (90 by default, at least 1) after it ' +
  'finished, when it is pruned (never while it is Queued or Processing). After that its id answers 404 and the ' +
  'same key is a new import job (idempotentReplay=false), whatever the body.';

function idempotencyKey(header: string, externalBatchId: string | null): string | null {
  const key = idempotencyKeyOf(header);
  if (key) return `header:${key}`;
  return externalBatchId ? `batch:${externalBatchId}` : null;
}

const responses = {
  200: {
    description: 'Accepted (in whole or in part) and queued; poll GET /api/v1/import-jobs/{id}.',
    schema: inboundImportResultSchema,
  },
};

export function inboundRoutes(deps: WriteDeps, batches: BatchPreparer): RouteDefinition[] {
  const { inbound } = deps.config;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/inbound/targets',
      operationId: 'pushInboundTarget',
      summary: 'Push one target',
      description: `Creates an import job of one target. An invalid target is a 400 (nothing queued). ${idempotencyDescription}`,
      tag: 'Inbound targets',
      auth: 'apiKey',
      body: inboundTargetSchema,
      errorStatuses: [409],
      maxInFlight: inbound.maxInFlight,
      inFlightGroup: 'inbound',
      parseBody(raw, { bytes }): IngestRequest {
        const { sourceSystem, ...fields } = parseOrThrow(inboundTargetSchema, raw, 'body');
        return {
          kind: 'Single',
          sourceSystem,
          externalBatchId: null,
          idempotencyKey: null,
          requestHash: bodyFingerprint(bytes),
          received: 1,
          accepted: 1,
          rejectedCount: 0,
          errors: [],
          errorsOmitted: 0,
          chunks: cutIntoChunks([{ index: 0, target: fields }], inbound.chunkMaxBytes),
        };
      },
      responses,
      async handler({ body, client, header, requestId, correlationId }) {
        const req = { ...body, idempotencyKey: idempotencyKey(header('idempotency-key'), null) };
        return { status: 200, body: await ingestTargets(deps, client, { requestId, correlationId }, req) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/inbound/targets/batch',
      operationId: 'pushInboundTargetBatch',
      summary: 'Push a batch of targets',
      description:
        `Partial acceptance: each target is validated on its own. Valid targets are queued in one import job; ` +
        `invalid ones are rejected and listed in errors (index, externalId, field, message). A batch with no valid ` +
        `target, or an invalid envelope, is a 400 and queues nothing. At most ${inbound.batchMaxTargets} targets ` +
        `and ${inbound.batchMaxBytes} bytes (413 beyond). A target sent twice (same sourceSystem and externalId) ` +
        `ends as one target holding the later data. ${idempotencyDescription}`,
      tag: 'Inbound targets',
      auth: 'apiKey',
      body: inboundTargetBatchSchema(inbound.batchMaxTargets),
      bodyLimitBytes: inbound.batchMaxBytes,
      errorStatuses: [409, 413],
      maxInFlight: inbound.maxInFlight,
      inFlightGroup: 'inbound',
      // Parsed, validated and serialised off the event loop when large (batch-pool.ts).
      parseRawBody: async (bytes): Promise<IngestRequest> => ({
        kind: 'Batch',
        idempotencyKey: null,
        ...(await batches.prepare(bytes)),
      }),
      responses,
      async handler({ body, client, header, requestId, correlationId }) {
        const req = { ...body, idempotencyKey: idempotencyKey(header('idempotency-key'), body.externalBatchId) };
        return { status: 200, body: await ingestTargets(deps, client, { requestId, correlationId }, req) };
      },
    }),
  ];
}
