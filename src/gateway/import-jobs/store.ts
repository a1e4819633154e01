import type { TenantTx } from '../../shared/db/tenant-scope.js';
import type { ImportJobStatus } from '../../shared/inbound/import-job.js';
import type { ImportJobDto } from './schemas.js';
import { iso } from '../../shared/iso-time.js';

export const importJobColumns = `id, kind, status, source_system, external_batch_id, received_count, accepted_count,
  rejected_count, applied_count, failed_count, errors, errors_omitted, failure_reason, created_at, updated_at,
  started_at, completed_at`;

export function toImportJobDto(r: Record<string, any>): ImportJobDto {
  return {
    importJobId: Number(r.id),
    kind: r.kind,
    status: r.status,
    sourceSystem: r.source_system,
    externalBatchId: r.external_batch_id,
    counts: {
      received: r.received_count,
      accepted: r.accepted_count,
      rejected: r.rejected_count,
      applied: r.applied_count,
      failed: r.failed_count,
    },
    errors: r.errors,
    errorsOmitted: r.errors_omitted,
    failureReason: r.failure_reason,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    startedAt: iso(r.started_at),
    completedAt: iso(r.completed_at),
  };
}

export async function findImportJob(db: TenantTx, clientId: string, id: string): Promise<ImportJobDto | null> {
  const { rows } = await db.query(`SELECT ${importJobColumns} FROM import_jobs WHERE id = $1 AND client_id = $2`, [
    id,
    clientId,
  ]);
  return rows[0] ? toImportJobDto(rows[0]) : null;
}

export type ImportJobPage = { items: ImportJobDto[]; total: number; totalIsExact: boolean; lastId: string | null };

/**
 * A page of the client's jobs, newest first, after `afterId` (keyset: the page's cost, however
 * deep) or past `skip` jobs (OFFSET, bounded by maxImportJobsSkip); lastId is the last job's id
 * when more follow (the next page's cursor), else null. The total counts at most totalLimit
 * matching jobs (a year of history per request would cost more than any page).
 *
 * The page's ids come from the filter's index alone (an index-only scan: each list index carries
 * tenant_id for the row policy, migrations/0031_import_jobs_list_index_only.sql), and only then
 * are those rows read. Asked for the rows directly, PostgreSQL may instead walk the primary key
 * backwards, betting that the client's jobs are spread evenly through the table: behind another
 * client's 300,000 newer jobs that first page took 500 ms (docs/benchmarks.md, bench:reads).
 *
 * The tenant is named in the statement although the row policy already holds the rows to it: the
 * policy's tenant is known only when the statement runs, so PostgreSQL would guess each tenant's
 * rows as an even share of the table; with 201 tenants it took a client's million jobs for 5,000,
 * under the total's limit, and counted them by a parallel scan of the table (60-115 ms; bench:growth).
 * Named, the estimate is the tenant's own, and the policy's check becomes a one-time filter. The
 * total counts in the index's order for the same reason the page's ids are picked first: counted
 * in any order, PostgreSQL may scan the table from its oldest rows, past every job of the clients
 * before this one (test/integration/list-plans.test.ts).
 */
export async function listImportJobs(
  tx: TenantTx,
  client: { tenantId: string; clientId: string },
  filter: { status?: ImportJobStatus; sourceSystem?: string; skip: number; take: number; afterId?: string },
  totalLimit: number,
): Promise<ImportJobPage> {
  const where = `tenant_id = $8 AND client_id = $1 AND ($2::text IS NULL OR status = $2)
                 AND ($3::text IS NULL OR source_system = $3)`;
  const values = [client.clientId, filter.status ?? null, filter.sourceSystem ?? null];
  // The page (one row more than asked: whether another follows) and the bounded total in one
  // statement (one round trip, one snapshot): a row for the total even when the page is empty.
  const { rows } = await tx.query(
    `SELECT (SELECT count(*)::int FROM (SELECT FROM import_jobs WHERE ${where} ORDER BY id DESC LIMIT $7) matching) AS total, page.*
       FROM (SELECT) one
       LEFT JOIN LATERAL (SELECT ${importJobColumns} FROM import_jobs
                           WHERE id IN (SELECT id FROM import_jobs
                                         WHERE ${where} AND ($6::bigint IS NULL OR id < $6)
                                         ORDER BY id DESC OFFSET $4 LIMIT $5)) page ON true
      ORDER BY page.id DESC`,
    [...values, filter.skip, filter.take + 1, filter.afterId ?? null, totalLimit + 1, client.tenantId],
  );
  const found = rows.filter((r) => r.id !== null);
  const page = found.slice(0, filter.take);
  const total = Math.min(rows[0].total, totalLimit);
  return {
    items: page.map(toImportJobDto),
    total,
    totalIsExact: rows[0].total <= totalLimit,
    lastId: found.length > filter.take ? String(page.at(-1)!.id) : null,
  };
}
