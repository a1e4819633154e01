import type { ApplyStamp } from '../../src/workers/apply-stamp.js';
import type { EdgeWait } from '../../src/workers/edge-record.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import type { TargetFields } from '../../src/shared/inbound/target-schema.js';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { applyChunk } from '../../src/workers/inbound/apply-chunk.js';
import { CopyFirstPolicy } from '../../src/workers/inbound/copy-first.js';
import { decodeChunk } from '../../src/workers/inbound/decode-chunk.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import type { InboundChunkOutcome } from '../../src/workers/worker-metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createDemo, insertImportJob, type Demo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';
import { mulberry32 } from '../support/prng.js';

// A chunk must store exactly what the targets' JSON says (read by PostgreSQL's own JSON functions
// in referenceInsert below), for any target the gateway accepts, on either of its paths: COPY
// straight into `targets` when all its targets are new, COPY into a staging table and one upsert
// when not.
// Generated targets full of what the formats treat specially (backslashes, newlines, tabs,
// quotes, braces, commas, the word NULL, NULLs and absent fields, repeated external ids, odd
// numbers) are applied each way into the real database and compared column by column as text.
// Then what sends a chunk from the first path to the second: existing targets, an external id
// twice, a concurrent chunk inserting the same new target, a deadlock with one.

const rnd = mulberry32(2026_11_25);
const pick = <T>(values: readonly T[]): T => values[Math.floor(rnd() * values.length)]!;
const pieces = [
  'a',
  'Z',
  '7',
  ' ',
  '\\',
  '\n',
  '\r',
  '\t',
  '"',
  "'",
  '{',
  '}',
  ',',
  'NULL',
  '\\N',
  '\\.',
  'ä',
  '🏠',
  '\u2028',
  '\u0001',
  '.',
  '[',
  ']',
];
const text = (max = 6) => Array.from({ length: 1 + Math.floor(rnd() * max) }, () => pick(pieces)).join('');
const maybe = <T>(make: () => T): T | null | undefined => pick([undefined, null, make(), make()]);
const number = () => pick([0, -0, 1, -1.5, 1e21, 1.5e-7, 123456.789, Math.PI, -1e-300]);

function generatedTarget(i: number): TargetFields {
  return {
    externalId: `${pick(['', 'x\\', 'tab\t', 'nl\n'])}${i % 37}`, // repeats: the later item wins
    name: text(10),
    address: maybe(() => ({ line1: text(), line2: maybe(text), city: text(), countryCode: 'DE', region: maybe(text) })),
    coordinates: maybe(() => ({
      latitude: pick([0, -0, 52.520008, -89.999999999, 1e-9, 90]),
      longitude: rnd() * 360 - 180,
    })),
    timeWindows: maybe(() =>
      [{ start: '2026-11-23T08:00:00+01:00', end: '2026-11-23T12:00:00Z' }].slice(0, pick([0, 1])),
    ),
    serviceDurationMinutes: maybe(() => pick([0, 15, 1440])),
    priority: maybe(() => pick([1, 3, 5])),
    tags: maybe(() => Array.from({ length: pick([0, 1, 3]) }, () => text(4))),
    metadata: maybe(() => ({ [text(3)]: pick<unknown>([text(8), number(), true, false, null]), n: number() })),
  } as TargetFields;
}

let db: TestDatabase;
let pool: Pool;
let demo: Demo;
beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 4, 'chunk-rows-apply'); // one more than the concurrency tests hold
  demo = await createDemo(pool);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const asMessage = (value: Buffer | string, headers = {}) => ({ value: Buffer.from(value), headers }) as InboundMessage;
/** Never tries COPY straight into targets: every chunk goes through the staging table. */
const upsertOnly = { shouldTry: () => false, missed: () => undefined };

const storedColumns = `(name, address, latitude, longitude, time_windows, service_duration_minutes, priority, tags,
                        metadata, last_import_job_id, last_item_index)::text`;
const stored = async (tenantId: string, sourceSystem: string) =>
  (
    await pool.query<{ external_id: string; columns: string }>(
      `SELECT external_id, ${storedColumns} AS columns FROM targets WHERE tenant_id = $1 AND source_system = $2
        ORDER BY external_id COLLATE "C"`,
      [tenantId, sourceSystem],
    )
  ).rows;

/**
 * The reference the chunk paths are held to: the targets' JSON, taken apart by PostgreSQL's
 * jsonb_to_record (JSON null reads as SQL NULL; an absent list or object as the column default),
 * the last item of an external id winning.
 */
const referenceInsert = `
  INSERT INTO targets (tenant_id, source_system, external_id, name, address, latitude, longitude, time_windows,
                       service_duration_minutes, priority, tags, metadata, last_import_job_id, last_item_index)
  SELECT DISTINCT ON (t."externalId" COLLATE "C") $1, $2, t."externalId", t.name, t.address,
         (t.coordinates->>'latitude')::float8, (t.coordinates->>'longitude')::float8, coalesce(t."timeWindows", '[]'),
         t."serviceDurationMinutes", t.priority, coalesce(t.tags, '{}'), coalesce(t.metadata, '{}'), $3, e."index"
    FROM jsonb_to_recordset($4::jsonb) AS e("index" int, target jsonb),
         jsonb_to_record(e.target) AS t("externalId" text, name text, address jsonb, coordinates jsonb,
                                        "timeWindows" jsonb, "serviceDurationMinutes" int, priority int,
                                        tags text[], metadata jsonb)
   ORDER BY t."externalId" COLLATE "C", e."index" DESC`;

/** A job's targets as decoded chunks of about `maxBytes` each. */
function decodedChunks(job: number, sourceSystem: string, targets: TargetFields[], maxBytes = 1 << 20) {
  const ids = { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId, requestId: null, correlationId: null };
  const items = targets.map((target, index) => ({ index, target }));
  return chunkMessages(String(job), sourceSystem, cutIntoChunks(items, maxBytes), ids).map((m) =>
    decodeChunk(asMessage(m.value as Buffer, m.headers)),
  );
}
const newJob = () => insertImportJob(pool, { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId });

/** The job is always there in these tests: an edge wait that never waits. */
/** Where the chunks came from does not matter here. */
const stamp: ApplyStamp = {
  topic: 'test.inbound.targets',
  partition: 0,
  offset: '0',
  producedAt: null,
  handledBy: 'test',
  traceId: null,
};
const present: EdgeWait = {
  producedAt: new Date().toISOString(),
  graceMs: 0,
  writerDone: async () => true,
  what: 'test',
};

describe("chunks (COPY rows) store what the targets' JSON says", () => {
  it('for 1,500 generated targets in chunks of a few kilobytes', async () => {
    const caller = { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId };
    const ids = { ...caller, requestId: null, correlationId: null };
    const items = Array.from({ length: 1500 }, (_, index) => ({ index, target: generatedTarget(index) }));
    const job = await insertImportJob(pool, caller);
    const chunks = cutIntoChunks(items, 8_000);
    expect(chunks.length).toBeGreaterThan(10);

    const decoded = chunkMessages(String(job), 'rows', chunks, ids).map((m) =>
      decodeChunk(asMessage(m.value as Buffer, m.headers)),
    );
    // Repeated external ids: every chunk goes through the staging table, whether it tries COPY first or not.
    const outcomes = [];
    for (const [i, chunk] of decoded.entries())
      outcomes.push(
        await applyChunk({ pool, chunk, wait: present, stamp, copyFirst: i % 2 ? upsertOnly : new CopyFirstPolicy() }),
      );
    expect(new Set(outcomes)).toEqual(new Set(['upserted']));
    await pool.query(referenceInsert, [caller.tenantId, 'json', job, JSON.stringify(items)]);

    const [fromJson, fromRows] = [await stored(caller.tenantId, 'json'), await stored(caller.tenantId, 'rows')];
    expect(fromJson.length).toBe(new Set(items.map((i) => i.target.externalId)).size);
    expect(fromRows).toEqual(fromJson);

    // The generator did reach what the formats treat specially (the comparison is not vacuous).
    const all = fromRows.map((r) => r.columns).join('');
    for (const special of ['\\\\', '\\n', '\\t', '\\r', 'NULL', '{', '🏠']) expect(all).toContain(special);
    expect(fromRows.some((r) => r.external_id.includes('\t'))).toBe(true);
  });

  it('stores new targets COPYd straight into targets as the staging table and upsert store them', async () => {
    // Unique external ids (still full of specials): every chunk is all new.
    const targets = Array.from({ length: 1200 }, (_, i) => {
      const t = generatedTarget(i);
      return { ...t, externalId: `${i}${t.externalId}` };
    });
    const job = await newJob();
    const policy = new CopyFirstPolicy();
    const outcomes: InboundChunkOutcome[] = [];
    for (const chunk of decodedChunks(job, 'copied', targets, 8_000))
      outcomes.push(await applyChunk({ pool, chunk, wait: present, stamp, copyFirst: policy }));
    await pool.query('DELETE FROM import_job_chunks WHERE import_job_id = $1', [job]);
    for (const chunk of decodedChunks(job, 'upserted', targets, 8_000))
      expect(await applyChunk({ pool, chunk, wait: present, stamp, copyFirst: upsertOnly })).toBe('upserted');

    expect(outcomes.length).toBeGreaterThan(10);
    expect(new Set(outcomes)).toEqual(new Set(['copied']));
    const [copied, upserted] = [await stored(demo.tenantId, 'copied'), await stored(demo.tenantId, 'upserted')];
    expect(copied).toHaveLength(targets.length);
    expect(copied).toEqual(upserted);
    const all = copied.map((r) => r.columns).join('');
    for (const special of ['\\\\', '\\n', '\\t', 'NULL', '🏠']) expect(all).toContain(special);
  });

  it('refuses a chunk whose rows do not number what it names on the COPY path too, writing nothing', async () => {
    const [chunk] = decodedChunks(await newJob(), 'miscounted', [generatedTarget(1), generatedTarget(2)]);
    await expect(
      applyChunk({ pool, chunk: { ...chunk!, itemCount: 3 }, wait: present, stamp, copyFirst: new CopyFirstPolicy() }),
    ).rejects.toThrow(PermanentMessageError);
    expect(await stored(demo.tenantId, 'miscounted')).toEqual([]);
  });

  it("leaves nothing in the session's staging table for the next chunk, committed or refused", async () => {
    const onePool = createPool(db.url, 1, 'chunk-rows-apply-one'); // every chunk on the same session
    try {
      const caller = { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId };
      const ids = { ...caller, requestId: null, correlationId: null };
      const staged = async () =>
        Number((await onePool.query('SELECT count(*) FROM pg_temp.inbound_chunk_rows')).rows[0].count);
      const chunkOf = async (sourceSystem: string, targets: TargetFields[], named?: number) => {
        const job = await insertImportJob(pool, caller);
        const items = targets.map((target, index) => ({ index, target }));
        const [m] = chunkMessages(String(job), sourceSystem, cutIntoChunks(items, 1 << 20), ids);
        const value = (m!.value as Buffer).toString();
        const text = named ? value.replace(/"itemCount":\d+/, `"itemCount":${named}`) : value;
        return decodeChunk(asMessage(text, m!.headers));
      };
      const targets = Array.from({ length: 20 }, (_, i) => ({ ...generatedTarget(i), externalId: `leak-${i}` }));

      const apply = async (chunk: ReturnType<typeof decodeChunk>) =>
        applyChunk({ pool: onePool, chunk, wait: present, stamp, copyFirst: upsertOnly });
      expect(await apply(await chunkOf('first', targets.slice(0, 10)))).toBe('upserted');
      expect(await staged()).toBe(0);
      await expect(apply(await chunkOf('refused', targets.slice(10), 11))).rejects.toThrow(PermanentMessageError);
      expect(await staged()).toBe(0);
      expect(await apply(await chunkOf('second', targets.slice(10)))).toBe('upserted');

      const { rows } = await pool.query(
        `SELECT source_system, count(*)::int AS n FROM targets WHERE tenant_id = $1 AND external_id LIKE 'leak-%'
          GROUP BY source_system ORDER BY source_system`,
        [caller.tenantId],
      );
      expect(rows).toEqual([
        { source_system: 'first', n: 10 },
        { source_system: 'second', n: 10 },
      ]);
    } finally {
      await onePool.end();
    }
  });
});

describe('a chunk that is not all new goes through the staging table and upsert', () => {
  const target = (externalId: string, name: string): TargetFields => ({ externalId, name });
  const names = async (sourceSystem: string) =>
    (
      await pool.query<{ external_id: string; name: string }>(
        `SELECT external_id, name FROM targets WHERE tenant_id = $1 AND source_system = $2
          ORDER BY external_id COLLATE "C"`,
        [demo.tenantId, sourceSystem],
      )
    ).rows.map((r) => `${r.external_id}=${r.name}`);

  it('when targets exist, with newer data winning, and the next chunks of that source skip COPY for a while', async () => {
    const policy = new CopyFirstPolicy(2);
    const apply = async (job: number, targets: TargetFields[]) =>
      applyChunk({ pool, chunk: decodedChunks(job, 'existing', targets)[0]!, wait: present, stamp, copyFirst: policy });
    const [older, first, second, third, fourth] = [
      await newJob(),
      await newJob(),
      await newJob(),
      await newJob(),
      await newJob(),
    ];

    expect(await apply(first, [target('a', 'a1'), target('b', 'b1')])).toBe('copied');
    expect(await apply(second, [target('c', 'c2'), target('b', 'b2')])).toBe('upserted'); // b exists
    expect(await apply(older, [target('a', 'a0'), target('d', 'd0')])).toBe('upserted'); // skipped COPY (1 of 2)
    expect(await apply(third, [target('e', 'e3')])).toBe('upserted'); // skipped COPY (2 of 2)
    expect(await apply(fourth, [target('f', 'f4')])).toBe('copied'); // tries again
    // The older job's a0 lost to a1; its d0 was new.
    expect(await names('existing')).toEqual(['a=a1', 'b=b2', 'c=c2', 'd=d0', 'e=e3', 'f=f4']);
  });

  it('when the chunk names an external id twice: the later item wins', async () => {
    const [chunk] = decodedChunks(await newJob(), 'twice', [
      target('x', 'first'),
      target('y', 'y'),
      target('x', 'later'),
    ]);
    expect(await applyChunk({ pool, chunk: chunk!, wait: present, stamp, copyFirst: new CopyFirstPolicy() })).toBe(
      'upserted',
    );
    expect(await names('twice')).toEqual(['x=later', 'y=y']);
  });

  // Another transaction holds a new target the chunk also inserts; the chunk's COPY waits for it.
  async function withHeldTarget(
    sourceSystem: string,
    heldId: string,
    whileWaiting: (holder: pg.PoolClient) => Promise<void>,
    applyPool = pool,
  ): Promise<InboundChunkOutcome> {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO targets (tenant_id, source_system, external_id, name, last_import_job_id, last_item_index)
         VALUES ($1, $2, $3, 'held', 0, 0)`,
        [demo.tenantId, sourceSystem, heldId],
      );
      const job = await newJob();
      const targets = ['m1', 'm2', 'm3'].map((id) => target(id, `${id}-chunk`));
      const applying = applyChunk({
        pool: applyPool,
        chunk: decodedChunks(job, sourceSystem, targets)[0]!,
        wait: present,
        stamp,
        copyFirst: new CopyFirstPolicy(),
      });
      await eventually(
        async () =>
          (
            await pool.query(
              `SELECT 1 FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%COPY targets %'`,
            )
          ).rowCount! > 0 || undefined,
        30_000,
        "the chunk's COPY waiting for the held target",
      );
      await whileWaiting(holder);
      return await applying;
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined); // a no-op after whileWaiting's COMMIT
      holder.release();
    }
  }

  it('when a concurrent transaction inserts the same new target first', async () => {
    const outcome = await withHeldTarget('raced', 'm2', (holder) => holder.query('COMMIT').then(() => undefined));
    expect(outcome).toBe('upserted');
    // The chunk's data is newer (job > 0) than the held row's: it wins there too.
    expect(await names('raced')).toEqual(['m1=m1-chunk', 'm2=m2-chunk', 'm3=m3-chunk']);
  });

  it('when it deadlocks with a concurrent transaction inserting the same new targets in another order', async () => {
    // PostgreSQL looks for a deadlock once per wait, deadlock_timeout after it began, in the
    // waiting session, which then gives way. The chunk's session waits first (for m3, holding
    // m1) and looks after 5 s; the holder then waits for m1 and would look only after 60 s.
    const url = new URL(db.url);
    url.searchParams.set('options', `-c deadlock_timeout=${scaled(5000)}`);
    const chunkPool = createPool(url.toString(), 1, 'chunk-rows-apply-deadlock');
    try {
      const outcome = await withHeldTarget(
        'deadlocked',
        'm3',
        async (holder) => {
          await holder.query(`SET LOCAL deadlock_timeout = '60s'`);
          await holder.query(
            `INSERT INTO targets (tenant_id, source_system, external_id, name, last_import_job_id, last_item_index)
             VALUES ($1, 'deadlocked', 'm1', 'held', 0, 0)`,
            [demo.tenantId],
          );
          await holder.query('COMMIT');
        },
        chunkPool,
      );
      expect(outcome).toBe('upserted');
      expect(await names('deadlocked')).toEqual(['m1=m1-chunk', 'm2=m2-chunk', 'm3=m3-chunk']);
    } finally {
      await chunkPool.end();
    }
  });
});
