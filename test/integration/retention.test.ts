import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { pruneImportJobs } from '../../src/workers/retention/import-jobs.js';
import { pruneRetained, retentionLockId } from '../../src/workers/retention/pruner.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createDemo } from '../support/fixtures.js';
import { scaled } from '../support/time-scale.js';

// Issue 51: finished import jobs past IMPORT_JOB_RETENTION_DAYS go, with their chunk ledger and
// route drafts, in bounded batches, by one pruner at a time; unfinished and recent jobs stay, and
// so do the targets the pruned jobs brought.

let db: TestDatabase;
let pool: Pool;
let caller: { tenantId: string; clientId: string };
const day = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 4, 'test', { connectionTimeoutMs: scaled(30_000) });
  const demo = await createDemo(pool);
  caller = { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId };
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** A job of the caller that finished `daysAgo` days ago (null: still Processing), with two chunks and a draft. */
async function job(daysAgo: number | null): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, request_hash, status, received_count,
                              accepted_count, rejected_count, chunk_count, created_at, completed_at)
     VALUES ($1, $2, 'Batch', 'retention', '\\x00', CASE WHEN $3::int IS NULL THEN 'Processing' ELSE 'Completed' END,
             2, 2, 0, 2, now() - make_interval(days => coalesce($3::int, 400) + 1),
             now() - make_interval(days => $3::int))
     RETURNING id`,
    [caller.tenantId, caller.clientId, daysAgo],
  );
  const id = rows[0]!.id;
  await pool.query(
    `INSERT INTO import_job_chunks (import_job_id, tenant_id, chunk_index, applied_count, failed_count)
     VALUES ($1, $2, 0, 1, 0), ($1, $2, 1, 1, 0)`,
    [id, caller.tenantId],
  );
  await pool.query(
    `INSERT INTO route_suggestions (id, tenant_id, client_id, import_job_id, request, result)
     VALUES ($1, $2, $3, $4, '{}', '{}')`,
    [randomUUID(), caller.tenantId, caller.clientId, id],
  );
  await pool.query(
    `INSERT INTO targets (tenant_id, source_system, external_id, name, last_import_job_id, last_item_index)
     VALUES ($1, 'retention', $2, 'kept', $3, 0)`,
    [caller.tenantId, `T-${id}`, id],
  );
  return id;
}

const count = async (sql: string, values: unknown[]) => Number((await pool.query(sql, values)).rows[0].n);

describe('import-job retention', () => {
  it('prunes finished jobs past the retention with their chunks and drafts, in batches; keeps the rest and the targets', async () => {
    const old = [await job(100), await job(95), await job(91), await job(120), await job(300)];
    const kept = [await job(89), await job(1), await job(null)];
    const all = [...old, ...kept];

    expect(await pruneImportJobs(pool, 90 * day, { batchSize: 2 })).toBe(5); // batches of 2, 2 and 1
    const left = (
      await pool.query<{ id: string }>('SELECT id FROM import_jobs WHERE id = ANY($1::bigint[])', [all])
    ).rows
      .map((r) => r.id)
      .sort();
    expect(left).toEqual([...kept].sort());
    expect(
      await count('SELECT count(*) AS n FROM import_job_chunks WHERE import_job_id = ANY($1::bigint[])', [old]),
    ).toBe(0);
    expect(
      await count('SELECT count(*) AS n FROM route_suggestions WHERE import_job_id = ANY($1::bigint[])', [old]),
    ).toBe(0);
    expect(
      await count('SELECT count(*) AS n FROM import_job_chunks WHERE import_job_id = ANY($1::bigint[])', [kept]),
    ).toBe(6);
    expect(
      await count('SELECT count(*) AS n FROM route_suggestions WHERE import_job_id = ANY($1::bigint[])', [kept]),
    ).toBe(3);
    // The targets they brought stay.
    expect(await count(`SELECT count(*) AS n FROM targets WHERE source_system = 'retention'`, [])).toBe(all.length);
    expect(await pruneImportJobs(pool, 90 * day, { batchSize: 2 })).toBe(0);
  });

  it('ends a round between batches once its worker stops', async () => {
    const old = [await job(150), await job(151), await job(152)];
    const stopping = new AbortController();
    stopping.abort();
    expect(await pruneImportJobs(pool, 90 * day, { batchSize: 1, signal: stopping.signal })).toBe(0);
    expect(await count('SELECT count(*) AS n FROM import_jobs WHERE id = ANY($1::bigint[])', [old])).toBe(3);
    expect(await pruneImportJobs(pool, 90 * day, { batchSize: 1 })).toBe(3);
  });

  it('prunes in one worker process at a time: while another holds the lock, a round skips', async () => {
    const old = await job(200);
    const config = { importJobRetentionMs: 90 * day, pruneIntervalMs: 60_000 };
    const other = await pool.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1)', [retentionLockId]);
      expect(await pruneRetained(pool, db.url, config)).toBeNull();
      expect(await count('SELECT count(*) AS n FROM import_jobs WHERE id = $1', [old])).toBe(1);
    } finally {
      await other.query('SELECT pg_advisory_unlock($1)', [retentionLockId]);
      other.release();
    }
    expect(await pruneRetained(pool, db.url, config)).toEqual({ importJobs: 1 });
    expect(await count('SELECT count(*) AS n FROM import_jobs WHERE id = $1', [old])).toBe(0);
  });
});
