import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { countImportJobsByStatus, createScrapeQueries } from '../../src/workers/ops/scrape-queries.js';
import {
  oldestReleasedDeadLetterActionSeconds,
  pruneDeadLetterRecords,
  type DeadLetterOffsets,
} from '../../src/workers/retention/dead-letters.js';
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
    const config = { importJobRetentionMs: 90 * day, deadLetterRetentionMs: 90 * day };
    const other = await pool.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1)', [retentionLockId]);
      expect(await pruneRetained(pool, db.url, config)).toBeNull();
      expect(await count('SELECT count(*) AS n FROM import_jobs WHERE id = $1', [old])).toBe(1);
    } finally {
      await other.query('SELECT pg_advisory_unlock($1)', [retentionLockId]);
      other.release();
    }
    expect(await pruneRetained(pool, db.url, config)).toEqual({
      importJobs: 1,
      deadLetterActions: 0,
      deadLettersHandled: 0,
    });
    expect(await count('SELECT count(*) AS n FROM import_jobs WHERE id = $1', [old])).toBe(0);
  });
});

/** An operator's action `daysAgo` days ago on `topic`, marking these [partition, offset]s handled. */
async function action(daysAgo: number, topic: string, marks: [number, number][]): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO dead_letter_actions (action, operator, at, dlq_topic, selection, message_count)
     VALUES ('purge', 'ops', now() - make_interval(days => $1), $2, '{}', $3) RETURNING id`,
    [daysAgo, topic, marks.length],
  );
  const id = rows[0]!.id;
  for (const [partition, offset] of marks)
    await pool.query(
      `INSERT INTO dead_letters_handled (dlq_topic, dlq_partition, dlq_offset, action_id) VALUES ($1, $2, $3, $4)`,
      [topic, partition, offset, id],
    );
  return id;
}

const marksOf = async (id: string) =>
  (
    await pool.query<{ m: string }>(
      `SELECT dlq_partition || '/' || dlq_offset AS m FROM dead_letters_handled WHERE action_id = $1 ORDER BY 1`,
      [id],
    )
  ).rows.map((r) => r.m);

describe('dead-letter record retention', () => {
  // What Kafka still retains: t.dlq partition 0 from offset 5, partition 1 from offset 11;
  // gone.dlq no longer exists; down.dlq cannot be read.
  const offsets: DeadLetterOffsets = async (topic) => {
    if (topic === 'ret-t.dlq')
      return [
        { partition: 0, low: 5, high: 9 },
        { partition: 1, low: 11, high: 20 },
      ];
    if (topic === 'ret-down.dlq') throw new Error('kafka: timed out');
    return [];
  };

  it('prunes actions past the retention once Kafka retains none of their dead letters, marks in batches; keeps the rest', async () => {
    const released = await action(100, 'ret-t.dlq', [
      [0, 0],
      [0, 1],
      [0, 2],
    ]);
    const partly = await action(100, 'ret-t.dlq', [
      [1, 10], // gone from Kafka
      [1, 11], // still retained: it keeps its action
    ]);
    const empty = await action(120, 'ret-t.dlq', []);
    const recent = await action(10, 'ret-t.dlq', [[0, 3]]);
    const gone = await action(200, 'ret-gone.dlq', [[0, 0]]);
    const down = await action(200, 'ret-down.dlq', [[0, 0]]);

    // Without Kafka's watermarks, only the action that marked nothing goes.
    expect(await pruneDeadLetterRecords(pool, 90 * day, { batchSize: 2 })).toEqual({ actions: 1, marks: 0 });
    expect(await count('SELECT count(*) AS n FROM dead_letter_actions WHERE id = $1', [empty])).toBe(0);

    // The four marks below their low watermark, in batches of 2, 2 and 0; then the one action left without marks.
    expect(await pruneDeadLetterRecords(pool, 90 * day, { offsets, batchSize: 2 })).toEqual({ actions: 1, marks: 4 });
    const left = (
      await pool.query<{ id: string }>('SELECT id FROM dead_letter_actions WHERE id = ANY($1::bigint[])', [
        [released, partly, empty, recent, gone, down],
      ])
    ).rows
      .map((r) => r.id)
      .sort();
    expect(left).toEqual([partly, recent, gone, down].sort());
    expect(await marksOf(released)).toEqual([]);
    expect(await marksOf(partly)).toEqual(['1/11']);
    expect(await marksOf(recent)).toEqual(['0/3']); // inside its retention, though Kafka dropped it
    expect(await marksOf(gone)).toEqual(['0/0']); // no watermark known: held
    expect(await marksOf(down)).toEqual(['0/0']);
    expect(await pruneDeadLetterRecords(pool, 90 * day, { offsets, batchSize: 2 })).toEqual({ actions: 0, marks: 0 });

    // The gauge's reading: the oldest action that holds no retained dead letter (recent, 10 days).
    const query = (sql: string, values: unknown[]) => pool.query(sql, values);
    await pool.query('DELETE FROM dead_letters_handled WHERE dlq_topic = $1', ['ret-down.dlq']);
    await pool.query('DELETE FROM dead_letter_actions WHERE id = $1', [down]);
    const age = await oldestReleasedDeadLetterActionSeconds(query, offsets);
    expect(age! / 86_400).toBeCloseTo(10, 1);
    // A topic whose watermarks cannot be read fails the reading (counted at scrape), not hides it.
    await action(300, 'ret-down.dlq', [[0, 0]]);
    await expect(oldestReleasedDeadLetterActionSeconds(query, offsets)).rejects.toThrow('timed out');
  });

  it('ends a round between batches once its worker stops', async () => {
    const old = await action(150, 'ret-t.dlq', [
      [0, 4],
      [1, 0],
    ]);
    const stopping = new AbortController();
    stopping.abort();
    expect(await pruneDeadLetterRecords(pool, 90 * day, { offsets, signal: stopping.signal })).toEqual({
      actions: 0,
      marks: 0,
    });
    expect(await marksOf(old)).toHaveLength(2);
    expect(await pruneDeadLetterRecords(pool, 90 * day, { offsets })).toEqual({ actions: 1, marks: 2 });
  });

  it('is part of the one pruner round, with the import jobs', async () => {
    const old = await action(95, 'ret-t.dlq', [[0, 1]]);
    expect(
      await pruneRetained(
        pool,
        db.url,
        { importJobRetentionMs: 90 * day, deadLetterRetentionMs: 90 * day },
        { deadLetterOffsets: offsets },
      ),
    ).toEqual({ importJobs: 0, deadLetterActions: 1, deadLettersHandled: 1 });
    expect(await count('SELECT count(*) AS n FROM dead_letter_actions WHERE id = $1', [old])).toBe(0);
  });
});

describe('the import_jobs gauge on a long history', () => {
  it('counts the jobs not finished per status exactly, from the partial index, and estimates the rest', async () => {
    for (let i = 0; i < 3; i++) await job(null); // Processing
    await pool.query(`UPDATE import_jobs SET status = 'Queued' WHERE id = (SELECT max(id) FROM import_jobs)`);
    for (let i = 0; i < 4; i++) await job(5); // Completed
    const truth = new Map(
      (
        await pool.query<{ status: string; n: string }>(
          `SELECT status, count(*) AS n FROM import_jobs WHERE status IN ('Queued', 'Processing') GROUP BY status`,
        )
      ).rows.map((r) => [r.status, Number(r.n)]),
    );
    expect(truth.get('Queued')).toBe(1);
    expect(truth.get('Processing')).toBeGreaterThanOrEqual(2);
    const queries = createScrapeQueries(db.url, scaled(10_000), createLogger('silent', 'test'));
    try {
      expect(await queries.importJobsByStatus()).toEqual(truth);
      await pool.query('ANALYZE import_jobs');
      const total = await count('SELECT count(*) AS n FROM import_jobs', []);
      expect(await queries.importJobsEstimate()).toBe(total); // exact just after ANALYZE of a small table
    } finally {
      await queries.close();
    }
    // The count can be served by import_jobs_unfinished_idx alone (a seq scan is cheaper on a table this small).
    const c = await pool.connect();
    try {
      await c.query('SET enable_seqscan = off');
      const plan = (await c.query(`EXPLAIN ${countImportJobsByStatus}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('import_jobs_unfinished_idx');
    } finally {
      c.release();
    }
  });
});
