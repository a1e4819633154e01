import type { TenantTx } from '../../shared/db/tenant-scope.js';
import type { ItemError } from '../../shared/inbound/import-job.js';
import { importJobColumns } from '../import-jobs/store.js';

export type NewImportJob = {
  tenantId: string;
  clientId: string;
  kind: 'Single' | 'Batch';
  sourceSystem: string;
  externalBatchId: string | null;
  idempotencyKey: string | null;
  requestHash: Buffer;
  received: number;
  accepted: number;
  rejected: number;
  chunkCount: number;
  errors: ItemError[];
  errorsOmitted: number;
};

/**
 * Inserts the job, or returns null when the client already used this idempotency key (a
 * concurrent insert of the same key waits here until the other transaction ends).
 */
export async function insertImportJob(tx: TenantTx, job: NewImportJob): Promise<Record<string, any> | null> {
  const { rows } = await tx.query(
    `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, external_batch_id, idempotency_key,
                              request_hash, received_count, accepted_count, rejected_count, chunk_count,
                              errors, errors_omitted)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (client_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING ${importJobColumns}`,
    [
      job.tenantId,
      job.clientId,
      job.kind,
      job.sourceSystem,
      job.externalBatchId,
      job.idempotencyKey,
      job.requestHash,
      job.received,
      job.accepted,
      job.rejected,
      job.chunkCount,
      JSON.stringify(job.errors),
      job.errorsOmitted,
    ],
  );
  return rows[0] ?? null;
}

export async function findImportJobByKey(
  tx: TenantTx,
  clientId: string,
  idempotencyKey: string,
): Promise<(Record<string, any> & { request_hash: Buffer }) | null> {
  const { rows } = await tx.query(
    `SELECT ${importJobColumns}, request_hash FROM import_jobs WHERE client_id = $1 AND idempotency_key = $2`,
    [clientId, idempotencyKey],
  );
  return rows[0] ?? null;
}
