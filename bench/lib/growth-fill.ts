// The filled database of bench/growth.ts (issue 51): a year of other tenants' data beside the
// measured tenant, made in SQL (generate_series, not through the API), kept as a template between
// runs. What goes in (sizes from GrowthFill):
//   - `targets` rows spread evenly over `tenants` other tenants (one client each), written tenant by
//     tenant in primary-key order (as years of imports leave a table: packed, not split pages);
//   - `otherJobs` import jobs of those tenants and `jobs` of the measured client, each with its one
//     chunk's ledger row (test/support/history.ts, one job every 30 s back from now);
//   - `routeDrafts` route suggestion drafts of those jobs (a request and a 20-stop result each);
//   - `webhookEvents` events over the last EVENT_RETENTION_HOURS (what the retention pruner keeps),
//     one endpoint per other tenant, one delivery per event (Succeeded, 1 % Failed), an attempt each
//     and a failed attempt before it for one delivery in ten, numbered in the event feed as the
//     gateway's sequencing leaves them.
// Foreign keys and triggers are off while it fills (session_replication_role = replica: the rows
// are consistent by construction); VACUUM ANALYZE and a CHECKPOINT at the end, as autovacuum and
// time leave a year-old database.
import type pg from 'pg';
import { fillImportJobHistory } from '../../test/support/history.js';

/**
 * What the fill writes, as a number: a template filled by another version is filled again
 * (bench/growth.ts compares every field). 2: events carry their subject_id, as the outbox writes it.
 */
export const growthFillVersion = 2;

export type GrowthFill = {
  version: number;
  targets: number;
  tenants: number;
  otherJobs: number;
  jobs: number;
  routeDrafts: number;
  webhookEvents: number;
  retentionHours: number;
};

export type FillStep = { step: string; ms: number };

/** The bench's own table in the filled database: the other tenants, numbered for the fill's joins. */
const createTenantList = `CREATE TABLE bench_growth_tenants (n int PRIMARY KEY, tenant_id uuid NOT NULL, client_id uuid NOT NULL,
  endpoint_id uuid NOT NULL)`;

export async function fillGrowth(
  pool: pg.Pool,
  measured: { tenantId: string; clientId: string },
  fill: GrowthFill,
  log: (line: string) => void,
): Promise<FillStep[]> {
  const steps: FillStep[] = [];
  const client = await pool.connect();
  const step = async (name: string, work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    const ms = performance.now() - started;
    steps.push({ step: name, ms: Math.round(ms) });
    log(`fill: ${name} in ${(ms / 1000).toFixed(1)} s`);
  };
  try {
    await client.query(`SET session_replication_role = replica`);
    await client.query(`SET synchronous_commit = off`);
    await client.query(`SET maintenance_work_mem = '512MB'`);
    await client.query(`SET work_mem = '64MB'`);
    await step(`${fill.tenants} other tenants, a client and a webhook endpoint each`, async () => {
      await client.query(createTenantList);
      // Numbered in tenant id order, the order the targets go in: each tenant's rows append to the
      // primary key's right edge.
      await client.query(
        `INSERT INTO bench_growth_tenants (n, tenant_id, client_id, endpoint_id)
         SELECT row_number() OVER (ORDER BY id) - 1, id, gen_random_uuid(), gen_random_uuid()
           FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $1::int)) u`,
        [fill.tenants],
      );
      await client.query(
        `INSERT INTO tenants (id, name) SELECT tenant_id, 'Growth tenant ' || n FROM bench_growth_tenants`,
      );
      await client.query(
        `INSERT INTO integration_clients (id, tenant_id, name) SELECT client_id, tenant_id, 'ERP of tenant ' || n FROM bench_growth_tenants`,
      );
      await client.query(
        `INSERT INTO webhook_endpoints (id, tenant_id, client_id, url, event_types, secret, last_success_at)
         SELECT endpoint_id, tenant_id, client_id, 'https://hooks.tenant-' || n || '.example/connect',
                ARRAY['import_job.completed', 'import_job.completed_with_errors', 'import_job.failed'],
                'whsec_' || encode(sha256(tenant_id::text::bytea), 'base64'), now()
           FROM bench_growth_tenants`,
      );
    });
    const tenants = (
      await client.query<{ tenant_id: string; client_id: string }>(
        'SELECT tenant_id, client_id FROM bench_growth_tenants ORDER BY n',
      )
    ).rows;
    const perTenantJobs = Math.max(1, Math.floor(fill.otherJobs / fill.tenants));
    await step(`${perTenantJobs * fill.tenants} import jobs of the other tenants, with their chunks`, async () => {
      for (const t of tenants)
        await fillImportJobHistory(client, { tenantId: t.tenant_id, clientId: t.client_id }, perTenantJobs, {
          chunks: true,
          vacuum: false,
        });
    });
    await step(`${fill.jobs} import jobs of the measured client, with their chunks`, () =>
      fillImportJobHistory(client, measured, fill.jobs, { chunks: true, vacuum: false }),
    );
    const perTenant = Math.ceil(fill.targets / fill.tenants);
    await step(`${perTenant * fill.tenants} targets, ${perTenant} per tenant`, async () => {
      for (let n = 0; n < fill.tenants; n++) {
        // Each target last written by one of its tenant's jobs (1,000 targets a job), items in order.
        await client.query(
          `INSERT INTO targets (tenant_id, source_system, external_id, name, address, latitude, longitude, time_windows,
                                service_duration_minutes, priority, tags, metadata, last_import_job_id, last_item_index,
                                created_at, updated_at)
           SELECT b.tenant_id, 'erp-' || (i % 2), 'SITE-' || lpad(i::text, 9, '0'), 'Customer site ' || i,
                  jsonb_build_object('line1', 'Hauptstraße ' || (i % 200 + 1), 'postalCode', '10115', 'city', 'Berlin',
                                     'countryCode', 'DE'),
                  52.4 + (i % 997) / 3988.0, 13.2 + (i % 991) / 2477.5,
                  CASE WHEN i % 3 = 0
                       THEN '[{"start": "2026-11-23T08:00:00+01:00", "end": "2026-11-23T12:00:00+01:00"}]'::jsonb
                       ELSE '[]'::jsonb END,
                  10 + (i % 4) * 5, 1 + i % 5,
                  CASE WHEN i % 2 = 1 THEN '{maintenance}'::text[] ELSE '{inspection,priority}'::text[] END,
                  jsonb_build_object('contract', 'C-' || (1000 + i % 97), 'floor', i % 7),
                  j.first_job + (i / 1000) % j.jobs, i % 1000, now() - interval '200 days', now() - interval '1 day'
             FROM bench_growth_tenants b,
                  LATERAL (SELECT min(id) AS first_job, count(*) AS jobs FROM import_jobs WHERE client_id = b.client_id) j,
                  generate_series(0, $2::int - 1) i
            WHERE b.n = $1
            ORDER BY 'erp-' || (i % 2), 'SITE-' || lpad(i::text, 9, '0')`,
          [n, perTenant],
        );
        if (n % Math.max(1, Math.floor(fill.tenants / 10)) === 0)
          log(`fill: targets of tenant ${n + 1}/${fill.tenants}`);
      }
    });
    await step(`${fill.routeDrafts} route suggestion drafts`, () =>
      client.query(
        `INSERT INTO route_suggestions (id, tenant_id, client_id, import_job_id, name, request, result, created_at)
         SELECT gen_random_uuid(), j.tenant_id, j.client_id, j.id, 'Route ' || j.id,
                jsonb_build_object('importJobId', j.id, 'depot', jsonb_build_object('latitude', 52.52, 'longitude', 13.405),
                                   'vehicles', 3, 'shiftStart', '08:00', 'shiftEnd', '17:00'),
                jsonb_build_object('routes', jsonb_build_array(jsonb_build_object('vehicle', 1, 'stops', s.stops)),
                                   'unassigned', '[]'::jsonb, 'totalDistanceMeters', 84210, 'totalDurationMinutes', 412),
                j.created_at
           FROM (SELECT * FROM import_jobs WHERE id % $2::int = 0 ORDER BY id LIMIT $1) j,
                LATERAL (SELECT jsonb_agg(jsonb_build_object('externalId', 'SITE-' || k, 'sequence', k,
                                                            'arrival', '2026-11-23T09:' || lpad(k::text, 2, '0') || ':00+01:00',
                                                            'latitude', 52.4 + k / 100.0, 'longitude', 13.2 + k / 80.0)) AS stops
                           FROM generate_series(1, 20) k WHERE j.id > 0) s`,
        [fill.routeDrafts, Math.max(1, Math.floor((fill.otherJobs + fill.jobs) / fill.routeDrafts))],
      ),
    );
    const events = fill.webhookEvents;
    await step(
      `${events} webhook events over ${fill.retentionHours} h, their deliveries and attempts, numbered in the feed`,
      async () => {
        // Event i: the other tenants' clients in turn, spread evenly over the retention window
        // (the newest a minute ago), feed position i + 1, its client's position i / tenants + 1.
        await client.query(
          `INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at, feed_seq, client_seq,
                                      subject_id)
           SELECT 'evt_0' || lpad(i::text, 25, '0'), b.tenant_id, b.client_id, e.type, 1,
                  json_build_object('id', 'evt_0' || lpad(i::text, 25, '0'), 'type', e.type, 'version', 1,
                                    'createdAt', e.at, 'data', json_build_object('importJobId', 1000000 + i,
                                    'status', e.status, 'sourceSystem', 'erp-' || (i % 2), 'externalBatchId', 'B-' || i,
                                    'counts', json_build_object('received', 1000, 'accepted', 1000, 'rejected', 0,
                                                                'applied', 1000, 'failed', 0)))::text,
                  e.at, i + 1, i / $2::int + 1, (1000000 + i)::text -- subject_id: the import job, as the outbox writes it
             FROM generate_series(0, $1::int - 1) i
             JOIN bench_growth_tenants b ON b.n = i % $2::int,
                  LATERAL (SELECT now() - interval '1 minute'
                                  - make_interval(secs => ($1::int - 1 - i) * ($3::float8 * 3600 - 120) / $1::int) AS at,
                                  CASE WHEN i % 10 = 9 THEN 'import_job.completed_with_errors' ELSE 'import_job.completed' END AS type,
                                  CASE WHEN i % 10 = 9 THEN 'CompletedWithErrors' ELSE 'Completed' END AS status) e`,
          [events, fill.tenants, fill.retentionHours],
        );
        await client.query(
          `INSERT INTO event_feed_clients (client_id, tenant_id, last_seq)
           SELECT client_id, tenant_id, max(client_seq) FROM webhook_events WHERE client_seq IS NOT NULL
            GROUP BY client_id, tenant_id
           ON CONFLICT (client_id) DO UPDATE SET last_seq = EXCLUDED.last_seq`,
        );
        await client.query(
          `UPDATE event_feed_head SET last_seq = (SELECT coalesce(max(feed_seq), 0) FROM webhook_events)`,
        );
        await client.query(
          `INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id, status, attempt_count, round_attempts,
                                           next_attempt_at, last_error, created_at, updated_at, completed_at)
           SELECT e.id, b.endpoint_id, e.tenant_id, CASE WHEN e.feed_seq % 100 = 50 THEN 'Failed' ELSE 'Succeeded' END,
                  CASE WHEN e.feed_seq % 10 = 5 THEN 2 ELSE 1 END, CASE WHEN e.feed_seq % 10 = 5 THEN 2 ELSE 1 END,
                  e.created_at, CASE WHEN e.feed_seq % 100 = 50 THEN 'HTTP 500' END,
                  e.created_at, e.created_at + interval '2 seconds', e.created_at + interval '2 seconds'
             FROM webhook_events e JOIN bench_growth_tenants b ON b.client_id = e.client_id
            ORDER BY e.feed_seq`,
        );
        // A failed attempt first for one delivery in ten, then the last attempt (Succeeded, or the
        // HttpError that failed the delivery).
        await client.query(
          `INSERT INTO webhook_attempts (delivery_id, event_id, endpoint_id, tenant_id, attempt, outcome, status_code,
                                         latency_ms, error, response_snippet, started_at, finished_at)
           SELECT d.id, d.event_id, d.endpoint_id, d.tenant_id, a.attempt, a.outcome, a.code, 40 + d.id % 200,
                  CASE WHEN a.outcome = 'HttpError' THEN 'HTTP ' || a.code END,
                  CASE WHEN a.outcome = 'HttpError' THEN '{"error":"upstream unavailable"}' ELSE '{"ok":true}' END,
                  d.created_at + make_interval(secs => a.attempt - 1), d.created_at + make_interval(secs => a.attempt)
             FROM webhook_deliveries d,
                  LATERAL (SELECT 1 AS attempt, 'HttpError' AS outcome, 503 AS code WHERE d.attempt_count = 2
                           UNION ALL
                           SELECT d.attempt_count, CASE WHEN d.status = 'Failed' THEN 'HttpError' ELSE 'Succeeded' END,
                                  CASE WHEN d.status = 'Failed' THEN 500 ELSE 200 END) a
            ORDER BY d.id, a.attempt`,
        );
      },
    );
    await client.query(`SET session_replication_role = origin`);
    await step('VACUUM ANALYZE and CHECKPOINT', async () => {
      await client.query('VACUUM ANALYZE');
      await client.query('CHECKPOINT');
    });
  } finally {
    client.release();
  }
  return steps;
}

const bigTables = [
  'targets',
  'import_jobs',
  'import_job_chunks',
  'route_suggestions',
  'webhook_events',
  'webhook_deliveries',
  'webhook_attempts',
];

/** The big tables' sizes: table with TOAST and indexes (pg_total_relation_size), indexes alone, rows (estimate). */
export async function tableSizes(pool: pg.Pool) {
  await pool.query(`ANALYZE ${bigTables.join(', ')}`); // reltuples of tables autovacuum has not seen yet
  const { rows } = await pool.query<{ table: string; total: string; indexes: string; rows: string }>(
    `SELECT c.relname AS table, pg_total_relation_size(c.oid)::bigint AS total, pg_indexes_size(c.oid)::bigint AS indexes,
            greatest(c.reltuples, 0)::bigint AS rows
       FROM pg_class c
      WHERE c.relname = ANY($1) AND c.relkind = 'r'
      ORDER BY pg_total_relation_size(c.oid) DESC`,
    [bigTables],
  );
  return rows.map((r) => ({
    table: r.table,
    totalBytes: Number(r.total),
    indexBytes: Number(r.indexes),
    rows: Number(r.rows),
  }));
}
