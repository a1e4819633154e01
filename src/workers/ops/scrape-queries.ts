// PostgreSQL readings of a worker's /metrics and /readyz, on a small pool of their own: a scrape
// never waits for a connection behind the applies, and applies never wait behind a scrape.
import { deadLetterDepths } from '../../shared/dead-letters/depth.js';
import { createPool, type Pool } from '../../shared/db/pool.js';
import type { PartitionOffsets } from '../../shared/kafka/bus.js';
import type { Logger } from '../../shared/logger.js';
import { withTimeout } from '../../shared/timeout.js';

/** What the dispatcher would claim now (the WHERE of claimDeliveries in webhooks/sql.ts); uses webhook_deliveries_due_idx. */
export const countDueDeliveries = `
  SELECT count(*) AS due FROM webhook_deliveries d
   WHERE d.status IN ('Pending', 'Delivering')
     AND d.next_attempt_at <= now()
     AND (d.lease_until IS NULL OR d.lease_until < now())
     AND EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.id = d.endpoint_id AND ep.status = 'Active')`;

export const countImportJobsByStatus = `SELECT status, count(*) AS jobs FROM import_jobs GROUP BY status`;

export type ScrapeQueries = {
  ping(): Promise<void>;
  webhookQueueDepth(): Promise<number>;
  importJobsByStatus(): Promise<Map<string, number>>;
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
    ping: () => query('SELECT 1', 'postgres ping').then(() => undefined),
    webhookQueueDepth: () =>
      query<{ due: string }>(countDueDeliveries, 'webhook queue depth').then((rows) => Number(rows[0]!.due)),
    importJobsByStatus: () =>
      query<{ status: string; jobs: string }>(countImportJobsByStatus, 'import jobs by status').then(
        (rows) => new Map(rows.map((r) => [r.status, Number(r.jobs)])),
      ),
    deadLetterDepths: (offsets) =>
      deadLetterDepths(offsets, (sql, values) => withTimeout(pool.query(sql, values), timeoutMs, 'dead letters')),
    close: () => pool.end(),
  };
}
