import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFeedPage } from '../../src/gateway/events/store.js';
import { listImportJobs } from '../../src/gateway/import-jobs/store.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createTenantPool, type TenantPool, type TenantTx } from '../../src/shared/db/tenant-scope.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createDemo } from '../support/fixtures.js';
import { fillImportJobHistory } from '../support/history.js';
import { scaled } from '../support/time-scale.js';

// Issue 49: a page of the import-job list reads what the page needs, wherever the client's jobs
// lie in the table and however many tenants share it. Before, the bounded total ran as a parallel
// scan of the whole table (bench:reads: 60-145 ms; bench:growth's 201 tenants: 60-115 ms) and a
// first page behind another client's newer jobs walked the primary key backwards past all of
// them (500 ms). Measured in pages of the table and its indexes that
// the statement touched (EXPLAIN's buffers), which do not depend on how busy the machine is.

const jobs = 150_000;
/** Another client's, newer than all of them: a walk past them reads about 1,200 table pages. */
const newerJobs = 50_000;
/**
 * The index pages of a 10,001-row total and of the skipped entries (about 70 each), and each row
 * of the page read by its primary key (index descent and heap: up to 5 pages). A walk past the other
 * client's 50,000 newer rows reads about 1,200 table pages; a scan of the whole table, about 6,000.
 */
const pagesAtMost = (take: number) => 300 + 5 * take;

let db: TestDatabase;
let pool: Pool;
let tenants: TenantPool;
let measured: { tenantId: string; clientId: string };

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, 'test', { connectionTimeoutMs: scaled(30_000) });
  tenants = createTenantPool(db.url, 1, 'test');
  const [a, b] = [await createDemo(pool), await createDemo(pool)];
  measured = { tenantId: a.tenantId, clientId: a.clients.all!.clientId };
  // Many tenants with a few jobs each (PostgreSQL's guess of one tenant's rows, before the row
  // policy's tenant is known, is the table over the tenants it counted), the measured client's
  // history, then another tenant's client that imports since.
  const { rows: others } = await pool.query<{ tenantId: string; clientId: string }>(
    `WITH t AS (INSERT INTO tenants (id, name) SELECT gen_random_uuid(), 'other ' || i FROM generate_series(1, 200) i
                RETURNING id)
     INSERT INTO integration_clients (id, tenant_id, name) SELECT gen_random_uuid(), id, 'other' FROM t
     RETURNING tenant_id AS "tenantId", id AS "clientId"`,
  );
  for (const other of others) await fillImportJobHistory(pool, other, 250, { vacuum: false });
  await fillImportJobHistory(pool, measured, jobs, { vacuum: false });
  await fillImportJobHistory(pool, { tenantId: b.tenantId, clientId: b.clients.all!.clientId }, newerJobs);
}, scaled(180_000));

afterAll(async () => {
  await tenants?.end();
  await pool?.end();
  await db?.drop();
});

/**
 * The buffers (pages hit or read) of the one statement `read` runs, from EXPLAIN (ANALYZE,
 * BUFFERS); `read` then gets `emptyAnswer`'s rows, as if nothing matched.
 */
async function pagesOf(
  read: (tx: TenantTx) => Promise<unknown>,
  emptyAnswer: Record<string, unknown>,
): Promise<number> {
  let pages: number | undefined;
  await tenants.run(measured.tenantId, async (tx) => {
    const explaining = new Proxy(tx, {
      get(target, key) {
        if (key !== 'query') return Reflect.get(target, key);
        return async (text: string, values: unknown[]) => {
          const { rows } = await target.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
          const plan = rows[0]['QUERY PLAN'][0].Plan;
          pages = plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
          return { rows: [emptyAnswer] };
        };
      },
    }) as TenantTx;
    await read(explaining);
  });
  return pages!;
}

const listPages = (filter: Parameters<typeof listImportJobs>[2]) =>
  pagesOf((tx) => listImportJobs(tx, measured, filter, 10_000), { total: 0, id: null });

describe('the import-job list on a table of many clients', () => {
  it.each([
    ['first page', { skip: 0, take: 50 }],
    ['status filter', { status: 'Failed' as const, skip: 0, take: 50 }],
    ['sourceSystem filter', { sourceSystem: 'erp-1', skip: 0, take: 50 }],
    ['both filters', { status: 'Completed' as const, sourceSystem: 'erp-2', skip: 0, take: 50 }],
    ['deepest offset page', { skip: 10_000, take: 200 }],
  ])('%s reads the page, not the history or another client', async (_, filter) => {
    const pages = await listPages(filter);
    expect(pages).toBeGreaterThan(0);
    expect(pages).toBeLessThanOrEqual(pagesAtMost(filter.take));
  });

  it('a page reached by the cursor reads the page', async () => {
    const { rows } = await pool.query(
      `SELECT id FROM import_jobs WHERE client_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1`,
      [measured.clientId, jobs / 2],
    );
    expect(await listPages({ skip: 0, take: 50, afterId: rows[0].id })).toBeLessThanOrEqual(pagesAtMost(50));
  });
});

describe("the event feed of a client with a retention's worth of events", () => {
  it('a long-poll a few events behind reads those events, not the retained ones', async () => {
    const events = 10_000;
    await pool.query(
      `INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at, client_seq)
       SELECT 'evt_0' || lpad(i::text, 25, '0'), $1, $2, 'import_job.completed', 1, json_build_object('pad', repeat('x', 300))::text, now(), i FROM generate_series(1, $3::int) i`,
      [measured.tenantId, measured.clientId, events],
    );
    await pool.query(`INSERT INTO event_feed_clients (client_id, tenant_id, last_seq) VALUES ($1, $2, $3)`, [
      measured.clientId,
      measured.tenantId,
      events,
    ]);
    await pool.query('VACUUM ANALYZE webhook_events');
    const pages = await pagesOf(
      (tx) => readFeedPage(tx, measured.clientId, { after: BigInt(events - 5), types: null, limit: 100 }),
      { last_seq: events, pruned_through: 0, client_seq: null },
    );
    expect(pages).toBeGreaterThan(0);
    // Five events and their index pages; before, every retained event's page (599 here, 10,092 in bench:growth).
    expect(pages).toBeLessThanOrEqual(50);
  });
});
