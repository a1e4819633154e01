// PostgreSQL readings of a worker's /metrics and /readyz, on a small pool of their own: a scrape
// never waits for a connection behind the applies, and applies never wait behind a scrape.
import { deadLetterDepths } from '../../shared/dead-letters/depth.js';
import { createPool, type Pool } from '../../shared/db/pool.js';
import { checkWritable } from '../../shared/db/writable.js';
import type { PartitionOffsets } from '../../shared/kafka/bus.js';
import type { Logger } from '../../shared/logger.js';
import { withTimeout } from '../../shared/timeout.js';
import { oldestReleasedDeadLetterActionSeconds, type DeadLetterOffsets } from '../retention/dead-letters.js';

/**
 * Due deliveries (Pending whose time has come, or Delivering whose lease expired) of Active
 * endpoints, split by whether the endpoint's breaker lets them out (the claim in
 * webhooks/sql.ts), and the Active endpoints whose breaker is open or probing.
 */
export const countWebhookQueue = `
  SELECT (SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
           WHERE d.status IN ('Pending', 'Delivering') AND d.next_attempt_at <= now()
             AND (d.lease_until IS NULL OR d.lease_until < now())
             AND ep.status = 'Active' AND ep.breaker_opened_at IS NULL) AS due,
         (SELECT count(*) FROM webhook_endpoints WHERE status = 'Active' AND breaker_opened_at IS NOT NULL) AS breakers_open`;

/**
 * Import jobs not finished yet, per status: read from import_jobs_unfinished_idx (migration 0030),
 * which holds only those, so a year of finished jobs costs a scrape nothing.
 */
export const countImportJobsByStatus = `
  SELECT status, count(*) AS jobs FROM import_jobs WHERE status IN ('Queued', 'Processing') GROUP BY status`;

/** PostgreSQL's estimate of the rows of import_jobs (-1, before its first VACUUM or ANALYZE: null). */
export const estimateImportJobs = `
  SELECT CASE WHEN reltuples < 0 THEN NULL ELSE reltuples::float8 END AS n FROM pg_class WHERE oid = 'import_jobs'::regclass`;

/** How long ago the oldest finished import job kept finished (by import_jobs_completed_idx: one index read). */
export const oldestFinishedImportJob = `
  SELECT extract(epoch FROM now() - min(completed_at))::float8 AS age FROM import_jobs WHERE completed_at IS NOT NULL`;

/** Deliveries a dispatcher would claim now; endpoints whose breaker holds theirs back. */
export type WebhookQueue = { due: number; breakersOpen: number };

export type ScrapeQueries = {
  /** Resolves when PostgreSQL answers and accepts writes (checkWritable: read-only is a failure). */
  ping(): Promise<void>;
  webhookQueue(): Promise<WebhookQueue>;
  /** Import jobs Queued and Processing (finished ones are not counted). */
  importJobsByStatus(): Promise<Map<string, number>>;
  importJobsEstimate(): Promise<number | null>;
  /** Seconds since the oldest finished import job kept finished (null: none kept). */
  oldestFinishedImportJobSeconds(): Promise<number | null>;
  /** Seconds since the oldest dead-letter action that holds no dead letter Kafka retains was made (null: none). */
  oldestReleasedDeadLetterActionSeconds(offsets: DeadLetterOffsets): Promise<number | null>;
  /** Dead letters of each topic not replayed or purged, given their watermarks (shared/dead-letters/depth.ts). */
  deadLetterDepths(offsets: Map<string, PartitionOffsets[]>): Promise<Map<string, number>>;
  close(): Promise<void>;
};

/**
 * Each statement is bounded twice: by statement_timeout in PostgreSQL (the server stops the work)
 * and by a timer here (a connection that hangs does not hold the scrape).
 */
export function createScrapeQueries(databaseUrl: string, timeoutMs: number, logger: Logger): ScrapeQueries {
  const pool: Pool = createPool(databaseUrl, 2, 'connect-workers-ops', {
    connectionTimeoutMs: timeoutMs,
    statementTimeoutMs: Math.floor(timeoutMs),
    onConnectionError: (err) => logger.debug({ err }, 'metrics connection to postgres failed'),
  });
  const query = <R extends Record<string, unknown>>(sql: string, what: string) =>
    withTimeout(pool.query<R>(sql), timeoutMs, what).then((r) => r.rows);

  return {
    ping: () => withTimeout(checkWritable(pool), timeoutMs, 'postgres ping'),
    webhookQueue: () =>
      query<{ due: string; breakers_open: string }>(countWebhookQueue, 'webhook queue').then(([r]) => ({
        due: Number(r!.due),
        breakersOpen: Number(r!.breakers_open),
      })),
    importJobsByStatus: () =>
      query<{ status: string; jobs: string }>(countImportJobsByStatus, 'import jobs by status').then(
        (rows) => new Map(rows.map((r) => [r.status, Number(r.jobs)])),
      ),
    importJobsEstimate: () =>
      query<{ n: number | null }>(estimateImportJobs, 'import jobs estimate').then(([r]) => r?.n ?? null),
    oldestReleasedDeadLetterActionSeconds: (offsets) =>
      oldestReleasedDeadLetterActionSeconds(
        (sql, values) => withTimeout(pool.query(sql, values), timeoutMs, 'oldest dead-letter action'),
        offsets,
      ),
    oldestFinishedImportJobSeconds: () =>
      query<{ age: number | null }>(oldestFinishedImportJob, 'oldest finished import job').then(
        ([r]) => r?.age ?? null,
      ),
    deadLetterDepths: (offsets) =>
      deadLetterDepths(offsets, (sql, values) => withTimeout(pool.query(sql, values), timeoutMs, 'dead letters')),
    close: () => pool.end(),
  };
}
