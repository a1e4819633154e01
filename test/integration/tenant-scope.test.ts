import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAppointmentId } from '../../src/shared/appointments/ids.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import {
  checkTenantScopeRole,
  createTenantPool,
  tenantScopeRole,
  type TenantPool,
} from '../../src/shared/db/tenant-scope.js';
import { readFeedPage } from '../../src/gateway/events/store.js';
import { startGateway } from '../../src/gateway/gateway.js';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { createEndpoint, deleteEndpoint, getEndpoint } from '../../src/shared/webhooks/endpoints.js';
import { sequenceEvents } from '../../src/shared/webhooks/feed.js';
import { newWebhookEventId } from '../../src/shared/webhooks/outbox.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// Issue 25: tenant scope that cannot be forgotten. Row-level security (migrations/0017) keyed on
// the tenant a TenantPool's connection serves: a statement in tenant A's scope sees none of tenant
// B's rows even without a WHERE, a scoped statement without a tenant sees nothing and writes nothing.

let db: TestDatabase;
/** Unscoped, as the tables' owner: seeds, and shows what is really there. */
let pool: Pool;
/** One connection, so every checkout reuses the one before. */
let scoped: TenantPool;

/** Child tables: each row holds its parent row's tenant_id (migrations/0020), no parent lookup. */
const childTables = [
  'import_job_chunks',
  'material_usage_lines',
  'appointment_status_history',
  'webhook_deliveries',
  'webhook_attempts',
];

/**
 * Tables with a tenant_id and no policy: integration_clients (authentication reads it before it
 * knows the tenant; no grant to the scope), targets (the inbound worker COPYs into it, which
 * PostgreSQL refuses on a table with row security; the scope reads it only through the view
 * tenant_targets, migrations/0019).
 */
const unscopedTenantTables = ['integration_clients', 'targets'];

/** One row in every scoped table, of a new tenant and client. */
async function seedTenant(): Promise<string> {
  const tenant = randomUUID();
  const client = randomUUID();
  const q = async (sql: string, values: unknown[] = []) => (await pool.query(sql, values)).rows[0];
  await q(`INSERT INTO tenants (id, name) VALUES ($1, 'tenant')`, [tenant]);
  await q(`INSERT INTO integration_clients (id, tenant_id, name) VALUES ($1, $2, 'c')`, [client, tenant]);
  const item = (
    await q(`INSERT INTO inventory_items (id, tenant_id, name) VALUES ($1, $2, 'i') RETURNING id`, [
      randomUUID(),
      tenant,
    ])
  ).id;
  const location = (
    await q(
      `INSERT INTO inventory_locations (id, tenant_id, location_type) VALUES ($1, $2, 'Warehouse') RETURNING id`,
      [randomUUID(), tenant],
    )
  ).id;
  await q('INSERT INTO inventory_balances (tenant_id, item_id, location_id) VALUES ($1, $2, $3)', [
    tenant,
    item,
    location,
  ]);
  await q(`INSERT INTO job_types (tenant_id, code, name) VALUES ($1, 'T', 'T')`, [tenant]);
  await q(`INSERT INTO tenant_sequences (tenant_id, name, value) VALUES ($1, 'job_number', 1)`, [tenant]);
  const fieldJob = randomUUID();
  await q(
    `INSERT INTO job_requests (field_job_id, tenant_id, client_id, external_id, idempotency_key, request_hash, job_number, request)
     VALUES ($1, $2, $3, 'x', 'k', '\\x00', 'J-1', '{}')`,
    [fieldJob, tenant, client],
  );
  await q(
    `INSERT INTO field_jobs (id, tenant_id, external_id, job_number, title, job_type, priority, customer, site)
     VALUES ($1, $2, 'x', 'J-1', 't', 'T', 'Normal', '{}', '{}')`,
    [fieldJob, tenant],
  );
  const workOrder = (
    await q(
      `INSERT INTO work_orders (tenant_id, external_work_order_id, field_job_id) VALUES ($1, 'w', $2) RETURNING id`,
      [tenant, fieldJob],
    )
  ).id;
  const usage = randomUUID();
  await q(
    `INSERT INTO material_usages (id, tenant_id, client_id, work_order_id, external_event_id, request_hash, location_id, used_at)
     VALUES ($1, $2, $3, $4, 'e', '\\x00', $5, now())`,
    [usage, tenant, client, workOrder, location],
  );
  await q(
    'INSERT INTO material_usage_lines (material_usage_id, tenant_id, line_no, item_id, quantity) VALUES ($1, $2, 1, $3, 1)',
    [usage, tenant, item],
  );
  await q(
    `INSERT INTO stock_movements (tenant_id, item_id, location_id, quantity_delta, reason, material_usage_id, line_no)
     VALUES ($1, $2, $3, -1, 'MaterialUsage', $4, 1)`,
    [tenant, item, location, usage],
  );
  const importJob = (
    await q(
      `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, request_hash, received_count, accepted_count,
                                rejected_count, chunk_count)
       VALUES ($1, $2, 'Single', 's', '\\x00', 1, 1, 0, 1) RETURNING id`,
      [tenant, client],
    )
  ).id;
  await q(
    'INSERT INTO import_job_chunks (import_job_id, tenant_id, chunk_index, applied_count, failed_count) VALUES ($1, $2, 0, 1, 0)',
    [importJob, tenant],
  );
  await q(
    `INSERT INTO targets (tenant_id, source_system, external_id, name, last_import_job_id, last_item_index)
     VALUES ($1, 's', 'x', 'n', $2, 0)`,
    [tenant, importJob],
  );
  await q(
    `INSERT INTO route_suggestions (id, tenant_id, client_id, import_job_id, request, result) VALUES ($1, $2, $3, $4, '{}', '{}')`,
    [randomUUID(), tenant, client, importJob],
  );
  const appointment = newAppointmentId();
  await q(
    `INSERT INTO appointment_requests (id, tenant_id, client_id, external_reference, service_type, priority, request, request_hash)
     VALUES ($1, $2, $3, 'r', 's', 'normal', '{}', '\\x00')`,
    [appointment, tenant, client],
  );
  await q(
    `INSERT INTO appointment_status_history (appointment_request_id, tenant_id, seq, to_status, actor, at)
     VALUES ($1, $2, 1, 'Submitted', 'client', now())`,
    [appointment, tenant],
  );
  const endpoint = randomUUID();
  await q(
    `INSERT INTO webhook_endpoints (id, tenant_id, client_id, url, event_types, secret)
     VALUES ($1, $2, $3, 'https://example.com/', '{*}', 'whsec_x')`,
    [endpoint, tenant, client],
  );
  const event = newWebhookEventId();
  await q(
    `INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body) VALUES ($1, $2, $3, 't', 1, '{}')`,
    [event, tenant, client],
  );
  const delivery = (
    await q('INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id) VALUES ($1, $2, $3) RETURNING id', [
      event,
      endpoint,
      tenant,
    ])
  ).id;
  await q(
    `INSERT INTO webhook_attempts (delivery_id, tenant_id, event_id, endpoint_id, attempt, outcome, latency_ms, started_at)
     VALUES ($1, $2, $3, $4, 1, 'Succeeded', 1, now())`,
    [delivery, tenant, event, endpoint],
  );
  await sequenceEvents(pool); // the event's position, and its client's row in event_feed_clients
  return tenant;
}

let scopedTables: string[];
let tenantA: string;
let tenantB: string;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, 'test');
  scoped = createTenantPool(db.url, 1, 'test-scoped');
  scopedTables = (
    await pool.query<{ tablename: string }>(
      `SELECT tablename FROM pg_policies WHERE policyname = 'tenant_scope' ORDER BY tablename`,
    )
  ).rows.map((r) => r.tablename);
  tenantA = await seedTenant();
  tenantB = await seedTenant();
});

afterAll(async () => {
  await Promise.all([pool?.end(), scoped?.end()]);
  await db?.drop();
});

/** What a statement on a connection that took the scope role, without a tenant, gets. */
async function unscopedOnScopedRole(sql: string): Promise<{ rows?: unknown[]; code?: string }> {
  const client = await pool.connect();
  try {
    await client.query(`BEGIN; SET LOCAL ROLE ${tenantScopeRole}`);
    return { rows: (await client.query(sql)).rows };
  } catch (err) {
    return { code: (err as { code?: string }).code };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

describe('tenant scope (row-level security)', () => {
  it('covers every table that holds tenant data, but those authentication reads', async () => {
    const { rows } = await pool.query<{ table_name: string; rls: boolean }>(
      `SELECT c.table_name, k.relrowsecurity AS rls
         FROM information_schema.columns c JOIN pg_class k ON k.oid = c.table_name::regclass
        WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id' AND k.relkind = 'r' -- views: their own test
        ORDER BY c.table_name`,
    );
    const withTenantColumn = rows.map((r) => r.table_name).filter((t) => !unscopedTenantTables.includes(t));
    expect(rows.filter((r) => r.rls).map((r) => r.table_name)).toEqual(withTenantColumn);
    // Every scoped table is one of those: child tables carry their parent's tenant (0020).
    expect(scopedTables).toEqual(withTenantColumn);
    for (const child of childTables) expect(withTenantColumn, child).toContain(child);
  });

  it('takes the tenant once per statement, not once per row (migrations/0018, 0020)', async () => {
    const { rows } = await pool.query<{ tablename: string; qual: string; with_check: string }>(
      `SELECT tablename, qual, with_check FROM pg_policies WHERE policyname = 'tenant_scope'`,
    );
    expect(rows.map((r) => r.tablename).sort()).toEqual(scopedTables);
    // A bare call in the condition runs for every row read, a parent lookup (EXISTS) reads the
    // parent for every row; a scalar subquery on the row's own tenant_id runs once (an InitPlan).
    const onceForm = (cond: string) => /^\(tenant_id = \( SELECT connect_scope_tenant\(\)/.test(cond);
    expect(rows.filter((r) => !onceForm(r.qual) || !onceForm(r.with_check))).toEqual([]);
    const plan = await scoped.run(tenantA, (tx) => tx.query('EXPLAIN SELECT count(*) FROM import_jobs'));
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/InitPlan/);
  });

  it("in tenant A's scope, a statement without a tenant condition sees A's rows and none of B's", async () => {
    for (const table of scopedTables) {
      const all = await pool.query(`SELECT t.tenant_id AS tenant FROM ${table} t`);
      expect(all.rows.map((r) => r.tenant).sort(), table).toEqual([tenantA, tenantB].sort());
      const seen = await scoped.run(tenantA, (tx) => tx.query(`SELECT t.tenant_id AS tenant FROM ${table} t`));
      expect(
        seen.rows.map((r) => r.tenant),
        table,
      ).toEqual([tenantA]);
    }
  });

  it('without a tenant, the scope role sees no row of any scoped table and cannot write one', async () => {
    for (const table of scopedTables) {
      expect(await unscopedOnScopedRole(`SELECT * FROM ${table}`), table).toEqual({ rows: [] });
    }
    expect(
      await unscopedOnScopedRole(`INSERT INTO job_types (tenant_id, code, name) VALUES ('${tenantA}', 'U', 'U')`),
    ).toEqual({ code: '42501' }); // new row violates row-level security policy
  });

  it("in A's scope, B's rows cannot be written, changed or deleted", async () => {
    const write = (sql: string) =>
      scoped
        .transaction(tenantA, (tx) => tx.query(sql))
        .then(
          (r) => ({ rowCount: r.rowCount }),
          (err: { code?: string }) => ({ code: err.code }),
        );
    expect(await write(`INSERT INTO job_types (tenant_id, code, name) VALUES ('${tenantB}', 'U', 'U')`)).toEqual({
      code: '42501',
    });
    expect(await write(`UPDATE job_types SET name = 'changed' WHERE tenant_id = '${tenantB}'`)).toEqual({
      rowCount: 0,
    });
    expect(await write(`DELETE FROM job_requests WHERE tenant_id = '${tenantB}'`)).toEqual({ rowCount: 0 });
    // Moving one of A's rows to B is a write of a B row.
    expect(await write(`UPDATE job_types SET tenant_id = '${tenantB}'`)).toEqual({ code: '42501' });
    const { rows } = await pool.query(`SELECT name FROM job_types WHERE tenant_id = $1`, [tenantB]);
    expect(rows).toEqual([{ name: 'T' }]);
  });

  it("targets: the scope reads only its tenant's rows, through tenant_targets, and never the table", async () => {
    const all = await pool.query('SELECT tenant_id FROM targets');
    expect(all.rows.map((r) => r.tenant_id).sort()).toEqual([tenantA, tenantB].sort());
    const seen = await scoped.run(tenantA, (tx) => tx.query('SELECT tenant_id FROM tenant_targets'));
    expect(seen.rows.map((r) => r.tenant_id)).toEqual([tenantA]);
    // B's row is not there even when asked for by name.
    const asked = await scoped.run(tenantA, (tx) =>
      tx.query('SELECT tenant_id FROM tenant_targets WHERE tenant_id = $1', [tenantB]),
    );
    expect(asked.rows).toEqual([]);
    expect(await unscopedOnScopedRole('SELECT * FROM tenant_targets')).toEqual({ rows: [] });
    for (const sql of ['SELECT * FROM targets', `DELETE FROM targets WHERE tenant_id = '${tenantB}'`]) {
      const denied = await scoped.run(tenantA, (tx) => tx.query(sql)).catch((err: { code?: string }) => err.code);
      expect(denied, sql).toBe('42501'); // permission denied
    }
    expect((await pool.query('SELECT count(*)::int AS n FROM targets')).rows[0].n).toBe(2);
  });

  it('the scope has no access to what authentication reads across tenants', async () => {
    for (const table of ['integration_clients', 'api_keys', 'api_key_scopes']) {
      const seen = await scoped
        .run(tenantA, (tx) => tx.query(`SELECT * FROM ${table}`))
        .catch((err: { code?: string }) => err.code);
      expect(seen, table).toBe('42501'); // permission denied
    }
  });

  it("a connection that served tenant A serves tenant B without any of A's rows, even after a rollback", async () => {
    const seen = (tenant: string) =>
      scoped.run(tenant, async (tx) => {
        const { rows } = await tx.query(
          `SELECT pg_backend_pid() AS pid, current_user AS role, array_agg(DISTINCT tenant_id) AS tenants FROM job_types`,
        );
        return rows[0] as { pid: number; role: string; tenants: string[] };
      });
    const first = await seen(tenantA);
    expect(first).toMatchObject({ role: tenantScopeRole, tenants: [tenantA] });
    expect(await seen(tenantB)).toEqual({ ...first, tenants: [tenantB] }); // the same connection
    // What a failed transaction changed goes with it: the connection keeps its scope and tenant.
    await expect(
      scoped.transaction(tenantA, async (tx) => {
        await tx.query('RESET ROLE');
        await tx.query(`SELECT set_config('connect.tenant_id', $1, false)`, [tenantB]);
        throw new Error('fails');
      }),
    ).rejects.toThrow('fails');
    expect(await seen(tenantA)).toEqual(first);
    expect(await seen(tenantB)).toEqual({ ...first, tenants: [tenantB] });
  });

  it('a role that may not take the scope: the start is refused, a connection is closed, never handed out unscoped', async () => {
    // A login role that may not take the scope role (what a DATABASE_URL user without the grant is).
    const role = `connect_test_${randomBytes(4).toString('hex')}`;
    await pool.query(`CREATE ROLE ${role} LOGIN`);
    const url = new URL(db.url);
    url.username = role;
    const refused = createTenantPool(url.toString(), 1, 'test-refused');
    try {
      // The gateway does not start (before Kafka is asked), naming what to grant; the owner passes.
      const config = loadConfig({ ...process.env, DATABASE_URL: url.toString(), PORT: '0' });
      await expect(startGateway(config, createLogger('silent', 'test'))).rejects.toThrow(
        `GRANT ${tenantScopeRole} TO ${role}`,
      );
      await expect(checkTenantScopeRole(pool)).resolves.toBeUndefined();
      for (let i = 0; i < 2; i++) {
        await expect(
          refused.run(tenantA, (tx) => tx.query('SELECT count(*) FROM tenants')),
          'setup, not the statement, fails',
        ).rejects.toMatchObject({ code: '42501', message: expect.stringContaining('set role') });
      }
      await expect
        .poll(
          async () =>
            (
              await pool.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND application_name = 'test-refused'`,
                [role],
              )
            ).rows[0].n,
        )
        .toBe(0);
    } finally {
      await refused.end();
      await pool.query(`DROP ROLE ${role}`);
    }
  });

  it('refuses a tenant id that is not a UUID before it reaches PostgreSQL', async () => {
    await expect(scoped.run("x'; RESET ROLE; --", async () => 1)).rejects.toThrow('is not a tenant id');
  });

  it("the event feed: a page read in A's scope has none of B's events, even asked for B's client", async () => {
    await sequenceEvents(pool); // across tenants, unscoped, as the gateway does it
    const clientOf = async (tenant: string) =>
      (await pool.query('SELECT client_id FROM webhook_events WHERE tenant_id = $1', [tenant])).rows[0].client_id;
    const page = (clientId: string) =>
      scoped.run(tenantA, (tx) => readFeedPage(tx, clientId, { after: null, types: null, limit: 100 }));
    const own = await page(await clientOf(tenantA));
    expect(own.events).toHaveLength(1);
    const foreign = await page(await clientOf(tenantB));
    expect(foreign).toMatchObject({ events: [], lastSeq: 0n }); // nor B's position (positions are per client)
  });

  it("webhook endpoints: in A's scope, B's endpoint is neither seen nor deleted, nor one made for B", async () => {
    const { rows } = await pool.query('SELECT id, client_id FROM webhook_endpoints WHERE tenant_id = $1', [tenantB]);
    const ref = { endpointId: rows[0].id as string, clientId: rows[0].client_id as string };
    expect(
      await scoped.run(tenantA, (tx) => getEndpoint(tx, ref, { endpointConcurrency: 4, endpointConcurrencyMax: 16 })),
    ).toBeNull();
    expect(await scoped.transaction(tenantA, (tx) => deleteEndpoint(tx, ref))).toBe(false);
    const made = scoped.run(tenantA, (tx) =>
      createEndpoint(tx, { tenantId: tenantB, clientId: ref.clientId, url: 'https://example.com/', eventTypes: '*' }),
    );
    await expect(made).rejects.toMatchObject({ code: '42501' });
    const left = await pool.query(
      `SELECT (SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1)::int AS endpoints,
              (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $2)::int AS deliveries`,
      [tenantB, ref.endpointId],
    );
    expect(left.rows[0]).toEqual({ endpoints: 1, deliveries: 1 });
  });
});
