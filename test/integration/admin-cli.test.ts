import { createHash, randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureDatabase, migrateUp } from '../../src/shared/db/migrate.js';
import { integrationScopes } from '../../src/shared/scopes.js';
import { runAdminCli, runAdminProcess, type CliRun } from '../support/admin-cli.js';
import { dropDatabase } from '../support/database.js';
import { scaled } from '../support/time-scale.js';

// The admin CLI against a throwaway database of this file's own, migrated as `npm run migrate`
// would (the CLI itself never creates or migrates one): in this process (runAdmin), and as
// operators run it, a child process, where only the process wrapper is tested (exit codes).

const keyPattern = /^cis_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$/;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const day = 86_400_000;

// The PostgreSQL server: the suite's (when its global setup ran), else DATABASE_URL, else local.
const serverUrl = (() => {
  let provided: string | undefined;
  try {
    provided = inject('templateDatabaseUrl');
  } catch {
    provided = undefined;
  }
  return provided ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
})();
const urlFor = (name: string) => {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};
const dbName = `connect_test_admin_${randomBytes(5).toString('hex')}`;
const databaseUrl = urlFor(dbName);

const cli = (...args: string[]): Promise<CliRun> => runAdminCli(databaseUrl, ...args);

/** Runs a command that must succeed: exit 0, nothing on stderr, exactly one JSON document on stdout. */
async function ok(...args: string[]): Promise<any> {
  const run = await cli(...args);
  expect(run, `admin ${args.join(' ')}`).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
}

/** Runs a command that must fail with `code`: nothing on stdout. */
async function fails(code: 1 | 2, ...args: string[]): Promise<string> {
  const run = await cli(...args);
  expect(run.code, `admin ${args.join(' ')}: ${run.stderr}`).toBe(code);
  expect(run.stdout).toBe('');
  return run.stderr;
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

let pool: pg.Pool;
let demo1: any;
let demo2: any;

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  await migrateUp(databaseUrl);
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  demo1 = await ok('demo');
  demo2 = await ok('demo', '--name', 'Second demo');
}, scaled(120_000));

afterAll(async () => {
  await pool?.end();
  await dropDatabase(urlFor('postgres'), dbName);
}, scaled(60_000));

describe('admin CLI', { timeout: scaled(120_000) }, () => {
  it('prints the usage on stdout and exits 0 for help and no arguments', async () => {
    const runs = await Promise.all([runAdminProcess(databaseUrl), cli('help'), cli('--help')]);
    for (const run of runs) {
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^Usage: /);
      for (const command of [
        'tenant create',
        'client create',
        'client rate-limit',
        'client upload-quota',
        'key create',
        'key revoke',
        'key list',
        'demo',
      ]) {
        expect(run.stdout).toContain(command);
      }
    }
  });

  it('never creates or migrates a database: a missing or unmigrated one is one clear line, exit 1', async () => {
    const missing = `connect_test_missing_${randomBytes(4).toString('hex')}`;
    const empty = `connect_test_empty_${randomBytes(4).toString('hex')}`;
    await ensureDatabase(urlFor(empty));
    try {
      const args = ['tenant', 'create', '--name', 'x'];
      const [toMissing, toEmpty] = await Promise.all([
        runAdminProcess(urlFor(missing), ...args),
        runAdminCli(urlFor(empty), ...args),
      ]);
      expect(toMissing).toMatchObject({ code: 1, stdout: '' });
      expect(toMissing.stderr).toMatch(/^admin: cannot use the database .* does not exist .*npm run migrate/);
      expect(toEmpty).toMatchObject({ code: 1, stdout: '' });
      expect(toEmpty.stderr).toMatch(/^admin: the database .* lacks \d+ migration\(s\) .*npm run migrate/);
      const { rows } = await pool.query(
        `SELECT (SELECT count(*)::int FROM pg_database WHERE datname = $1) AS created,
                (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'public') AS tables_here`,
        [missing],
      );
      expect(rows[0].created, 'the missing database was not created').toBe(0);
      const emptyDb = new pg.Client({ connectionString: urlFor(empty) });
      await emptyDb.connect();
      const tables = (await emptyDb.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`))
        .rows[0].n;
      await emptyDb.end();
      expect(tables, 'no table was made in the empty database').toBe(0);
    } finally {
      await dropDatabase(urlFor('postgres'), empty);
    }
  });

  it('runs side by side: concurrent commands succeed', async () => {
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => ok('tenant', 'create', '--name', `parallel ${i}`)),
    );
    expect(new Set(runs.map((r) => r.tenantId)).size).toBe(6);
  });

  it('exits 2 with usage text on stderr for malformed command lines', async () => {
    const client = randomUUID();
    const cases = [
      ['bogus'],
      ['key'],
      ['key', 'rotate'],
      ['tenant', 'create'],
      ['tenant', 'create', '--name', 'x', '--colour', 'blue'],
      ['key', 'create', '--client', client],
      [
        'key',
        'create',
        '--client',
        client,
        '--scopes',
        'all',
        '--expires-at',
        '2030-01-01T00:00:00Z',
        '--expires-in',
        '1d',
      ],
      ['client', 'rate-limit', '--client', client],
      ['client', 'rate-limit', '--client', client, '--per-minute', '5', '--default'],
      ['client', 'upload-quota', '--client', client],
      ['client', 'upload-quota', '--client', client, '--bytes-per-second', '5000', '--default'],
    ];
    const stderrs = await Promise.all(cases.map((args) => fails(2, ...args)));
    expect(await runAdminProcess(databaseUrl, 'bogus')).toMatchObject({ code: 2, stdout: '' });
    for (const stderr of stderrs) {
      expect(stderr).toMatch(/^admin: .+\n/);
      expect(stderr).toContain('Usage: ');
    }
  });

  it('demo prints the tenant, one client per scope plus "all" and "none", and three work orders', () => {
    for (const out of [demo1, demo2]) {
      expect(Object.keys(out).sort()).toEqual(['clients', 'tenantId', 'workOrders']);
      expect(out.tenantId).toMatch(uuidPattern);
      expect(Object.keys(out.clients).sort()).toEqual(['all', 'none', ...integrationScopes].sort());
      for (const client of Object.values<any>(out.clients)) {
        expect(Object.keys(client).sort()).toEqual(['apiKey', 'clientId']);
        expect(client.clientId).toMatch(uuidPattern);
        expect(client.apiKey).toMatch(keyPattern);
      }
      const short = out.tenantId.slice(0, 8);
      expect(out.workOrders).toHaveLength(3);
      out.workOrders.forEach((wo: any, i: number) => {
        expect(Object.keys(wo).sort()).toEqual(['externalWorkOrderId', 'workOrderId']);
        expect(Number.isInteger(wo.workOrderId)).toBe(true);
        expect(wo.externalWorkOrderId).toBe(`WO-DEMO-${short}-${i + 1}`);
      });
    }
  });

  it('creates a new, separate tenant on every demo run', async () => {
    expect(demo2.tenantId).not.toBe(demo1.tenantId);
    const keys1 = Object.values<any>(demo1.clients).map((c) => c.apiKey);
    const keys2 = Object.values<any>(demo2.clients).map((c) => c.apiKey);
    expect(new Set([...keys1, ...keys2]).size).toBe(2 * (integrationScopes.length + 2));
    const { rows } = await pool.query(
      `SELECT t.id, t.name, (SELECT count(*)::int FROM inventory_items i WHERE i.tenant_id = t.id) AS items
         FROM tenants t WHERE t.id = ANY($1::uuid[]) ORDER BY t.created_at`,
      [[demo1.tenantId, demo2.tenantId]],
    );
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.id === demo2.tenantId)?.name).toBe('Second demo');
    expect(rows[0].items).toBe(rows[1].items); // same SKUs in both tenants: unique per tenant only
  });

  it('demo stores inventory items, locations of several types, low and negative balances, work orders', async () => {
    const tenant = demo1.tenantId;
    const items = (await pool.query('SELECT * FROM inventory_items WHERE tenant_id = $1', [tenant])).rows;
    expect(items.length).toBeGreaterThanOrEqual(6);
    for (const item of items) {
      expect(item.sku).toBeTruthy();
      expect(item.category_name).toBeTruthy();
      expect(item.unit_of_measure).toBeTruthy();
    }
    expect(items.some((i) => i.track_stock === false)).toBe(true);
    expect(items.some((i) => i.low_stock_threshold !== null)).toBe(true);
    expect(items.some((i) => i.default_quantity !== null)).toBe(true);

    const locations = (await pool.query('SELECT * FROM inventory_locations WHERE tenant_id = $1', [tenant])).rows;
    const types = new Set(locations.map((l) => l.location_type));
    expect(types.size).toBeGreaterThanOrEqual(3);
    for (const type of ['Warehouse', 'Vehicle', 'Technician', 'CustomerSite']) expect(types).toContain(type);
    expect(locations.filter((l) => l.is_default).map((l) => l.location_type)).toEqual(['Warehouse']);
    for (const l of locations) expect(l.external_code).toBeTruthy();

    // Low and negative exactly as the gateway's balance read computes them.
    const {
      rows: [counts],
    } = await pool.query(
      `SELECT count(*)::int AS balances,
              count(*) FILTER (WHERE b.quantity_on_hand < 0)::int AS negative,
              count(*) FILTER (WHERE b.quantity_on_hand >= 0 AND b.quantity_on_hand <= i.low_stock_threshold)::int AS low,
              count(*) FILTER (WHERE NOT i.track_stock)::int AS untracked
         FROM inventory_balances b JOIN inventory_items i ON i.id = b.item_id
        WHERE b.tenant_id = $1 AND i.tenant_id = $1`,
      [tenant],
    );
    expect(counts.negative).toBe(1);
    expect(counts.low).toBeGreaterThanOrEqual(1);
    expect(counts.balances - counts.negative - counts.low).toBeGreaterThanOrEqual(1); // some normal ones too
    expect(counts.untracked).toBe(0);

    const workOrders = (
      await pool.query('SELECT id, external_work_order_id FROM work_orders WHERE tenant_id = $1 ORDER BY id', [tenant])
    ).rows;
    expect(workOrders.map((w) => ({ workOrderId: w.id, externalWorkOrderId: w.external_work_order_id }))).toEqual(
      demo1.workOrders,
    );
  });

  it('gives each demo client one key holding exactly its scopes', async () => {
    const { rows } = await pool.query(
      `SELECT c.id, c.tenant_id, c.rate_limit_per_minute, count(DISTINCT k.id)::int AS keys,
              coalesce(array_agg(s.scope ORDER BY s.scope) FILTER (WHERE s.scope IS NOT NULL), '{}') AS scopes
         FROM integration_clients c
         JOIN api_keys k ON k.client_id = c.id
         LEFT JOIN api_key_scopes s ON s.api_key_id = k.id
        WHERE c.tenant_id = $1
        GROUP BY c.id`,
      [demo1.tenantId],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.size).toBe(integrationScopes.length + 2);
    for (const [label, { clientId }] of Object.entries<any>(demo1.clients)) {
      const expected = label === 'all' ? [...integrationScopes] : label === 'none' ? [] : [label];
      expect(byId.get(clientId), label).toMatchObject({
        keys: 1,
        scopes: expected.sort(),
        rate_limit_per_minute: null,
      });
    }
  });

  it('stores only the prefix and SHA-256 of a key, never the key', async () => {
    const keys = [...Object.values<any>(demo1.clients), ...Object.values<any>(demo2.clients)].map(
      (c) => c.apiKey as string,
    );
    const { rows } = await pool.query('SELECT to_jsonb(k) AS row, k.key_hash, k.prefix FROM api_keys k');
    const stored = rows.map((r) => ({
      values: Object.values<unknown>(r.row),
      text: JSON.stringify(r.row),
      hash: r.key_hash as Buffer,
      prefix: r.prefix,
    }));
    for (const key of keys) {
      const row = stored.find((s) => s.hash.equals(sha256(key)));
      expect(row, 'a row whose key_hash is sha256(key)').toBeDefined();
      expect(row!.prefix).toBe(key.slice(0, 12));
      const secret = key.slice(13);
      for (const s of stored) {
        expect(s.values).not.toContain(key);
        expect(s.text).not.toContain(secret);
      }
    }
  });

  it('creates a tenant, a client and keys, and lists the keys without secrets', async () => {
    const tenant = await ok('tenant', 'create', '--name', '  Acme Field Service  ');
    expect(tenant).toEqual({ tenantId: expect.stringMatching(uuidPattern), name: 'Acme Field Service' });
    const client = await ok('client', 'create', '--tenant', tenant.tenantId, '--name', 'ERP', '--rate-limit', '120');
    expect(client).toEqual({
      clientId: expect.stringMatching(uuidPattern),
      tenantId: tenant.tenantId,
      name: 'ERP',
      rateLimitPerMinute: 120,
    });
    const plain = await ok('client', 'create', '--tenant', tenant.tenantId, '--name', 'CRM');
    expect(plain.rateLimitPerMinute).toBeNull();

    const [two, all, none] = await Promise.all([
      ok(
        'key',
        'create',
        '--client',
        client.clientId,
        '--scopes',
        'connect.jobs.write, connect.inventory.read,connect.jobs.write',
      ),
      ok('key', 'create', '--client', client.clientId, '--scopes', 'all'),
      ok('key', 'create', '--client', client.clientId, '--scopes', ''),
    ]);
    expect(Object.keys(two).sort()).toEqual(['apiKey', 'clientId', 'expiresAt', 'keyId', 'prefix', 'scopes']);
    expect(two).toMatchObject({
      keyId: expect.stringMatching(uuidPattern),
      clientId: client.clientId,
      apiKey: expect.stringMatching(keyPattern),
      scopes: ['connect.inventory.read', 'connect.jobs.write'],
      expiresAt: null,
    });
    expect(two.prefix).toBe(two.apiKey.slice(0, 12));
    expect(all.scopes).toEqual([...integrationScopes]);
    expect(none.scopes).toEqual([]);

    const { rows } = await pool.query(
      'SELECT api_key_id, array_agg(scope ORDER BY scope) AS scopes FROM api_key_scopes WHERE api_key_id = ANY($1::uuid[]) GROUP BY 1',
      [[two.keyId, all.keyId, none.keyId]],
    );
    expect(rows.find((r) => r.api_key_id === two.keyId)?.scopes).toEqual([
      'connect.inventory.read',
      'connect.jobs.write',
    ]);
    expect(rows.find((r) => r.api_key_id === all.keyId)?.scopes).toHaveLength(integrationScopes.length);
    expect(rows.find((r) => r.api_key_id === none.keyId)).toBeUndefined();

    const list = await ok('key', 'list', '--client', client.clientId);
    expect(Object.keys(list)).toEqual(['keys']);
    expect(list.keys.map((k: any) => k.keyId).sort()).toEqual([two.keyId, all.keyId, none.keyId].sort());
    for (const k of list.keys) {
      expect(Object.keys(k).sort()).toEqual(['createdAt', 'expiresAt', 'keyId', 'prefix', 'revokedAt', 'scopes']);
      expect(k.revokedAt).toBeNull();
      expect(Number.isNaN(Date.parse(k.createdAt))).toBe(false);
    }
    expect(list.keys.find((k: any) => k.keyId === two.keyId)).toMatchObject({ prefix: two.prefix, scopes: two.scopes });
    expect(JSON.stringify(list)).not.toMatch(/cis_[0-9a-f]{8}_/);
    expect(await ok('key', 'list', '--client', plain.clientId)).toEqual({ keys: [] });
  });

  it('rejects an unknown scope with exit 1, naming it and the valid scopes, and creates nothing', async () => {
    const clientId = demo1.clients.none.clientId;
    const before = (await pool.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n;
    const [unknown, mixedAll] = await Promise.all([
      fails(1, 'key', 'create', '--client', clientId, '--scopes', 'connect.inventory.read,inventory.delete'),
      fails(1, 'key', 'create', '--client', clientId, '--scopes', 'all,connect.jobs.write'),
    ]);
    expect(unknown).toMatch(/^admin: unknown scope "inventory\.delete"; valid scopes: /);
    for (const scope of integrationScopes) expect(unknown).toContain(scope);
    expect(unknown.trimEnd().split('\n')).toHaveLength(1);
    expect(mixedAll).toContain('"all"');
    expect((await pool.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n).toBe(before);
  });

  it('revokes a key by id or prefix, idempotently keeping the first revocation time', async () => {
    const clientId = demo1.clients['integration.health.read'].clientId;
    const [a, b] = await Promise.all([
      ok('key', 'create', '--client', clientId, '--scopes', 'integration.health.read'),
      ok('key', 'create', '--client', clientId, '--scopes', 'integration.health.read'),
    ]);
    const first = await ok('key', 'revoke', '--key', a.keyId);
    expect(first).toEqual({ keyId: a.keyId, revokedAt: expect.any(String) });
    const stored = (await pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [a.keyId])).rows[0]
      .revoked_at as Date;
    expect(stored.toISOString()).toBe(first.revokedAt);
    expect(Math.abs(stored.getTime() - Date.now())).toBeLessThan(60_000);

    const [again, byPrefix] = await Promise.all([
      ok('key', 'revoke', '--key', a.keyId),
      ok('key', 'revoke', '--key', a.prefix),
    ]);
    expect(again).toEqual(first);
    expect(byPrefix).toEqual(first);
    expect((await pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [a.keyId])).rows[0].revoked_at).toEqual(
      stored,
    );

    // The other key of the client is untouched; revoking it by prefix works too.
    expect(
      (await pool.query('SELECT revoked_at FROM api_keys WHERE id = $1', [b.keyId])).rows[0].revoked_at,
    ).toBeNull();
    expect((await ok('key', 'revoke', '--key', b.prefix)).keyId).toBe(b.keyId);
    const list = await ok('key', 'list', '--client', clientId);
    expect(
      list.keys
        .filter((k: any) => k.revokedAt !== null)
        .map((k: any) => k.keyId)
        .sort(),
    ).toEqual([a.keyId, b.keyId].sort());

    const [unknownId, unknownPrefix, garbage] = await Promise.all([
      fails(1, 'key', 'revoke', '--key', randomUUID()),
      fails(1, 'key', 'revoke', '--key', 'cis_00000000'),
      fails(1, 'key', 'revoke', '--key', 'not-a-key'),
    ]);
    expect(unknownId).toMatch(/^admin: key .* not found\n$/);
    expect(unknownPrefix).toMatch(/^admin: key with prefix cis_00000000 not found\n$/);
    expect(garbage).toMatch(/^admin: --key must be/);
  });

  it('sets and clears a client rate limit', async () => {
    const clientId = demo2.clients['connect.jobs.write'].clientId;
    const limit = async () =>
      (await pool.query('SELECT rate_limit_per_minute FROM integration_clients WHERE id = $1', [clientId])).rows[0]
        .rate_limit_per_minute;

    expect(await ok('client', 'rate-limit', '--client', clientId, '--per-minute', '42')).toEqual({
      clientId,
      rateLimitPerMinute: 42,
    });
    expect(await limit()).toBe(42);
    expect(await ok('client', 'rate-limit', '--client', clientId, '--default')).toEqual({
      clientId,
      rateLimitPerMinute: null,
    });
    expect(await limit()).toBeNull();

    const errors = await Promise.all([
      fails(1, 'client', 'rate-limit', '--client', clientId, '--per-minute', '0'),
      fails(1, 'client', 'rate-limit', '--client', clientId, '--per-minute', 'many'),
      fails(1, 'client', 'rate-limit', '--client', randomUUID(), '--per-minute', '10'),
    ]);
    expect(errors[0]).toMatch(/--per-minute must be an integer/);
    expect(errors[2]).toMatch(/^admin: client .* not found\n$/);
    expect(await limit()).toBeNull();
  });

  it('sets and clears a client upload quota', async () => {
    const clientId = demo2.clients['connect.jobs.write'].clientId;
    const quota = async () =>
      (await pool.query('SELECT upload_bytes_per_second FROM integration_clients WHERE id = $1', [clientId])).rows[0]
        .upload_bytes_per_second;

    expect(await ok('client', 'upload-quota', '--client', clientId, '--bytes-per-second', '16777216')).toEqual({
      clientId,
      uploadBytesPerSecond: 16777216,
    });
    expect(await quota()).toBe(16777216);
    expect(await ok('client', 'upload-quota', '--client', clientId, '--default')).toEqual({
      clientId,
      uploadBytesPerSecond: null,
    });
    expect(await quota()).toBeNull();

    const errors = await Promise.all([
      fails(1, 'client', 'upload-quota', '--client', clientId, '--bytes-per-second', '1023'),
      fails(1, 'client', 'upload-quota', '--client', clientId, '--bytes-per-second', '2147483648'),
      fails(1, 'client', 'upload-quota', '--client', clientId, '--bytes-per-second', 'lots'),
      fails(1, 'client', 'upload-quota', '--client', randomUUID(), '--bytes-per-second', '4096'),
    ]);
    expect(errors[0]).toMatch(/--bytes-per-second must be an integer from 1024 to 1073741824/);
    expect(errors[1]).toMatch(/--bytes-per-second must be an integer/);
    expect(errors[2]).toMatch(/--bytes-per-second must be an integer/);
    expect(errors[3]).toMatch(/^admin: client .* not found\n$/);
    expect(await quota()).toBeNull();
  });

  it('sets expires_at from --expires-in (now + duration) or --expires-at', async () => {
    const clientId = demo1.clients['import_jobs.read'].clientId;
    const before = Date.now();
    const [in30d, in12h, at] = await Promise.all([
      ok('key', 'create', '--client', clientId, '--scopes', 'import_jobs.read', '--expires-in', '30d'),
      ok('key', 'create', '--client', clientId, '--scopes', 'import_jobs.read', '--expires-in', '12h'),
      ok(
        'key',
        'create',
        '--client',
        clientId,
        '--scopes',
        'import_jobs.read',
        '--expires-at',
        '2031-06-30T12:00:00+02:00',
      ),
    ]);
    const after = Date.now();
    const storedExpiry = async (keyId: string) =>
      (
        (await pool.query('SELECT expires_at FROM api_keys WHERE id = $1', [keyId])).rows[0].expires_at as Date
      ).getTime();

    for (const [out, ms] of [
      [in30d, 30 * day],
      [in12h, 12 * 3_600_000],
    ] as const) {
      const stored = await storedExpiry(out.keyId);
      expect(stored).toBeGreaterThanOrEqual(before + ms - 1000);
      expect(stored).toBeLessThanOrEqual(after + ms + 1000);
      expect(new Date(stored).toISOString()).toBe(out.expiresAt);
    }
    expect(at.expiresAt).toBe('2031-06-30T10:00:00.000Z');
    expect(await storedExpiry(at.keyId)).toBe(Date.parse('2031-06-30T10:00:00Z'));

    const errors = await Promise.all([
      fails(1, 'key', 'create', '--client', clientId, '--scopes', 'all', '--expires-in', '30x'),
      fails(1, 'key', 'create', '--client', clientId, '--scopes', 'all', '--expires-in', '0d'),
      fails(1, 'key', 'create', '--client', clientId, '--scopes', 'all', '--expires-at', '2031-02-30T00:00:00Z'),
      fails(1, 'key', 'create', '--client', clientId, '--scopes', 'all', '--expires-at', 'tomorrow'),
    ]);
    expect(errors[0]).toMatch(/^admin: --expires-in must be/);
    expect(errors[2]).toMatch(/^admin: --expires-at must be an ISO 8601/);
  });

  it('reports unknown or malformed ids with exit 1 and one line on stderr', async () => {
    const errors = await Promise.all([
      fails(1, 'client', 'create', '--tenant', randomUUID(), '--name', 'orphan'),
      fails(1, 'key', 'create', '--client', randomUUID(), '--scopes', 'all'),
      fails(1, 'key', 'list', '--client', randomUUID()),
      fails(1, 'key', 'list', '--client', 'client-1'),
      fails(1, 'tenant', 'create', '--name', '   '),
    ]);
    expect(errors[0]).toMatch(/^admin: tenant .* not found\n$/);
    expect(errors[1]).toMatch(/^admin: client .* not found\n$/);
    expect(errors[2]).toMatch(/^admin: client .* not found\n$/);
    expect(errors[3]).toMatch(/^admin: --client must be a UUID/);
    for (const e of errors) expect(e.split('\n').filter(Boolean)).toHaveLength(1);
  });
});
