import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { countWebhookQueue } from '../../src/workers/ops/scrape-queries.js';
import { claimCandidates, claimDeliveries, recordSuccesses } from '../../src/workers/webhooks/sql.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// Issue 50: the dispatcher's statements read due deliveries per endpoint, and must do so by an
// endpoint-first index whatever the statistics say. The trap: statistics taken while the queue was
// empty (a server's nearly always are: a table of finished deliveries is not re-analysed when an
// outage adds a few thousand due ones) cost a partial index of due deliveries as empty, and the
// planner walked webhook_deliveries_due_idx (all endpoints' due deliveries, by time) once per
// endpoint: a claim of 0.4-1.1 s in bench:webhooks' outage. Here the queue is analysed empty, an
// outage is added, and every plan of the dispatcher's statements (custom and generic, as prepared
// statements use both) must reach webhook_deliveries only by endpoint or by delivery id.

const tenants = 20;
const endpointsPerTenant = 15;
const historyEvents = 40; // finished deliveries per endpoint: the table is mostly history
const outageEvents = 4; // per endpoint: 2 due, 2 in flight

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, 'test');
  await pool.query(`
    WITH t AS (INSERT INTO tenants (id, name) SELECT gen_random_uuid(), 'plan ' || i FROM generate_series(1, ${tenants}) i RETURNING id)
    INSERT INTO integration_clients (id, tenant_id, name) SELECT gen_random_uuid(), id, 'plan' FROM t`);
  // Half the endpoints answer (their last attempt succeeded), half fail: both claim loops look.
  await pool.query(`
    INSERT INTO webhook_endpoints (id, tenant_id, client_id, url, event_types, secret, last_success_at, last_failure_at)
    SELECT gen_random_uuid(), c.tenant_id, c.id, 'https://receiver.example/' || i, '{field_job.created}', 'whsec_plan',
           now() - interval '1 minute', CASE WHEN i % 2 = 0 THEN now() END
      FROM integration_clients c, generate_series(1, ${endpointsPerTenant}) i`);
  const events = (from: number, count: number) => `
    INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body)
    SELECT 'evt_0' || lpad((c.n * 1000 + g)::text, 25, '0'), c.tenant_id, c.id, 'field_job.created', 1, '{}'
      FROM (SELECT *, row_number() OVER (ORDER BY id) AS n FROM integration_clients) c, generate_series(${from}, ${from + count - 1}) g`;
  await pool.query(events(1, historyEvents));
  await pool.query(`
    INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id, status, attempt_count, completed_at)
    SELECT e.id, ep.id, ep.tenant_id, 'Succeeded', 1, now() FROM webhook_events e JOIN webhook_endpoints ep ON ep.client_id = e.client_id`);
  // The statistics of a quiet day: no delivery due. Kept so (autovacuum off for this file's
  // database's table): a server that analysed it after the outage's rows would not test the trap.
  await pool.query('ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)');
  await pool.query('VACUUM (ANALYZE) webhook_deliveries');
  await pool.query(events(historyEvents + 1, outageEvents));
  await pool.query(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id, status, next_attempt_at, lease_until, lease_token)
     SELECT e.id, ep.id, ep.tenant_id, CASE WHEN g.n % 2 = 0 THEN 'Pending' ELSE 'Delivering' END, now() - interval '5 seconds',
            CASE WHEN g.n % 2 = 1 THEN now() + interval '1 hour' END, CASE WHEN g.n % 2 = 1 THEN gen_random_uuid() END
       FROM (SELECT *, row_number() OVER (PARTITION BY client_id ORDER BY id) AS n FROM webhook_events) g
       JOIN webhook_events e ON e.id = g.id
       JOIN webhook_endpoints ep ON ep.client_id = e.client_id
      WHERE g.n > $1`,
    [historyEvents],
  );
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Plans?: PlanNode[];
};

/** Each scan of webhook_deliveries in the plan: how it reaches the table. */
function deliveryScans(node: PlanNode, found: string[] = []): string[] {
  if (node['Relation Name'] === 'webhook_deliveries' && /Scan/.test(node['Node Type'])) {
    found.push(`${node['Node Type']} ${node['Index Name'] ?? ''} ${node['Index Cond'] ?? node['Recheck Cond'] ?? ''}`);
  }
  for (const child of node.Plans ?? []) deliveryScans(child, found);
  return found;
}

/** By an endpoint (first column endpoint_id) or by delivery id: never a walk of every endpoint's rows. */
const keyed = /\((?:\w+\.)?(?:endpoint_id|id) = /;

async function plansOf(text: string, values: unknown[]): Promise<string[]> {
  const scans: string[] = [];
  const client = await pool.connect();
  try {
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await client.query(`SET plan_cache_mode = ${mode}`);
      const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        values,
      );
      scans.push(...deliveryScans(rows[0]!['QUERY PLAN'][0].Plan).map((s) => `${mode}: ${s}`));
    }
  } finally {
    await client.query('RESET plan_cache_mode');
    client.release();
  }
  return scans;
}

const endpointIds = async () =>
  (await pool.query<{ id: string }>('SELECT id FROM webhook_endpoints ORDER BY id LIMIT 40')).rows.map((r) => r.id);

/** chooseDue's parameters as dispatcher.ts chooseDueNow gives them (no tenant served yet). */
const chooseDue = (endpoints: string[] | null, notAnswering: boolean) =>
  [512, 4, 16, 128, [], [], [], [], 32, [], 1000, [], endpoints, notAnswering] as unknown[];

describe('the dispatcher reads due deliveries by endpoint, with statistics of an empty queue', () => {
  it('has the outage to plan for', async () => {
    const { rows } = await pool.query<{ due: number; flight: number }>(
      `SELECT count(*) FILTER (WHERE status = 'Pending')::int AS due, count(*) FILTER (WHERE status = 'Delivering')::int AS flight
         FROM webhook_deliveries`,
    );
    expect(rows[0]).toEqual({ due: tenants * endpointsPerTenant * 2, flight: tenants * endpointsPerTenant * 2 });
    const { rows: stats } = await pool.query<{ reltuples: number }>(
      "SELECT reltuples FROM pg_class WHERE relname = 'webhook_deliveries_endpoint_due_idx'",
    );
    expect(stats[0]!.reltuples).toBe(0); // analysed while nothing was due
  });

  it.each([
    ['claimCandidates, endpoints that answer', () => Promise.resolve([claimCandidates, chooseDue(null, false)])],
    ['claimCandidates, the others', () => Promise.resolve([claimCandidates, chooseDue(null, true)])],
    ['claimDeliveries', async () => [claimDeliveries, [...chooseDue(await endpointIds(), true).slice(0, 14), 15_000]]],
    [
      'recordSuccesses (chaining)',
      async () => {
        const { rows } = await pool.query<{ id: string; lease_token: string; event_id: string; endpoint_id: string }>(
          "SELECT id, lease_token, event_id, endpoint_id FROM webhook_deliveries WHERE status = 'Delivering' LIMIT 8",
        );
        const n = rows.length;
        return [
          recordSuccesses,
          [
            rows.map((r) => r.id),
            rows.map((r) => r.lease_token),
            rows.map((r) => r.event_id),
            rows.map((r) => r.endpoint_id),
            Array(n).fill(1),
            Array(n).fill(200),
            Array(n).fill(5),
            Array(n).fill(''),
            Array(n).fill(new Date()),
            10,
            Array(n).fill(true),
            15_000,
            [],
            4,
            16,
          ],
        ];
      },
    ],
  ] as [string, () => Promise<[string, unknown[]]>][])('%s', async (_name, statement) => {
    const [text, values] = await statement();
    const scans = await plansOf(text, values);
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.filter((s) => !keyed.test(s))).toEqual([]);
  });

  it('the queue-depth scrape reads only due deliveries, not the history', async () => {
    const scans = await plansOf(countWebhookQueue, []);
    // Every due delivery of every endpoint, so not keyed: but from an index of due deliveries only.
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.filter((s) => !/webhook_deliveries_endpoint_due_idx/.test(s))).toEqual([]);
  });
});
