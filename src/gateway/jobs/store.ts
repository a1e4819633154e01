import type { TenantTx } from '../../shared/db/tenant-scope.js';

export type JobRequestRow = {
  field_job_id: string;
  external_id: string;
  idempotency_key: string;
  request_hash: Buffer;
  job_number: string;
  status: string | null;
};

/** Serialises requests for one (tenant, key) until this transaction ends: duplicates queue up. */
export const lockKey = (tx: TenantTx, tenantId: string, key: string) =>
  tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`job:${tenantId}:${key}`]);

/** An earlier request with this idempotency key, or with this external id. */
export async function findJobRequest(
  tx: TenantTx,
  tenantId: string,
  key: string,
  externalId: string,
): Promise<JobRequestRow | null> {
  const { rows } = await tx.query(
    `SELECT r.field_job_id, r.external_id, r.idempotency_key, r.request_hash, r.job_number,
            CASE WHEN r.failed_at IS NOT NULL THEN 'Failed' ELSE j.status END AS status
       FROM job_requests r LEFT JOIN field_jobs j ON j.id = r.field_job_id
      WHERE r.tenant_id = $1 AND (r.idempotency_key = $2 OR r.external_id = $3)
      ORDER BY (r.idempotency_key = $2) DESC LIMIT 1`,
    [tenantId, key, externalId],
  );
  return rows[0] ?? null;
}

/**
 * Next job number of the tenant. Run it outside the edge transaction (in a short one of its own: the counter
 * row is locked for this statement only), or one tenant's creations would queue behind each
 * other's wait for Kafka; a number drawn for a creation that then fails is not reused.
 */
export async function nextJobNumber(tx: TenantTx, tenantId: string): Promise<string> {
  const { rows } = await tx.query(
    `INSERT INTO tenant_sequences (tenant_id, name, value) VALUES ($1, 'job_number', 1)
     ON CONFLICT (tenant_id, name) DO UPDATE SET value = tenant_sequences.value + 1 RETURNING value`,
    [tenantId],
  );
  return `J-${String(rows[0].value).padStart(6, '0')}`;
}

export async function jobTypeExists(tx: TenantTx, tenantId: string, code: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM job_types WHERE tenant_id = $1 AND code = $2', [tenantId, code]);
  return rowCount === 1;
}

export async function targetExists(tx: TenantTx, tenantId: string, sourceSystem: string, externalId: string) {
  const { rowCount } = await tx.query(
    'SELECT 1 FROM tenant_targets WHERE tenant_id = $1 AND source_system = $2 AND external_id = $3',
    [tenantId, sourceSystem, externalId],
  );
  return rowCount === 1;
}

export async function insertJobRequest(
  tx: TenantTx,
  r: {
    fieldJobId: string;
    tenantId: string;
    clientId: string;
    externalId: string;
    key: string;
    hash: Buffer;
    jobNumber: string;
    request: unknown;
  },
): Promise<void> {
  await tx.query(
    `INSERT INTO job_requests (field_job_id, tenant_id, client_id, external_id, idempotency_key, request_hash,
                               job_number, request)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [r.fieldJobId, r.tenantId, r.clientId, r.externalId, r.key, r.hash, r.jobNumber, JSON.stringify(r.request)],
  );
}
