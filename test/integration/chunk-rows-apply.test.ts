import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import type { TargetFields } from '../../src/shared/inbound/target-schema.js';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { applyChunk } from '../../src/workers/inbound/apply-chunk.js';
import { decodeChunk } from '../../src/workers/inbound/decode-chunk.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import { v1ChunkValue } from '../support/chunk-messages.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createDemo, insertImportJob, type Demo } from '../support/fixtures.js';
import { mulberry32 } from '../support/prng.js';

// A v2 chunk (COPY rows into a staging table, then one upsert) must store exactly what the v1
// chunk (one JSON document parsed by PostgreSQL) stores, for any target the gateway accepts:
// generated targets full of what either format treats specially (backslashes, newlines, tabs,
// quotes, braces, commas, the word NULL, NULLs and absent fields, repeated external ids, odd
// numbers), applied both ways into the real database and compared column by column as text.

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
  pool = createPool(db.url, 2, 'chunk-rows-apply');
  demo = await createDemo(pool);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const asMessage = (value: Buffer | string) => ({ value: Buffer.from(value) }) as InboundMessage;

describe('v2 chunks (COPY rows) and v1 chunks (JSON) store the same targets', () => {
  it('for 1,500 generated targets in chunks of a few kilobytes, applied in two source systems', async () => {
    const caller = { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId };
    const ids = { ...caller, requestId: null, correlationId: null };
    const items = Array.from({ length: 1500 }, (_, index) => ({ index, target: generatedTarget(index) }));
    const job = await insertImportJob(pool, caller);
    const chunks = cutIntoChunks(items, 8_000);
    expect(chunks.length).toBeGreaterThan(10);

    const v2 = chunkMessages(String(job), 'v2', chunks, ids).map((m) => decodeChunk(asMessage(m.value as Buffer)));
    let at = 0;
    const v1 = chunks.map((chunk, chunkIndex) => {
      const identity = { importJobId: String(job), sourceSystem: 'v1', chunkIndex, chunkCount: chunks.length };
      const slice = items.slice(at, (at += chunk.items));
      return decodeChunk(asMessage(v1ChunkValue(ids, identity, slice, slice.length)));
    });
    expect(v2.every((c) => c.format === 'rows') && v1.every((c) => c.format === 'json')).toBe(true);
    // Both apply into the same job's ledger: chunk indexes must not collide, so v1 goes first and
    // its ledger rows are removed before v2 claims the same indexes.
    for (const chunk of v1) expect(await applyChunk(pool, chunk, (load) => load())).toBe('applied');
    await pool.query('DELETE FROM import_job_chunks WHERE import_job_id = $1', [job]);
    for (const chunk of v2) expect(await applyChunk(pool, chunk, (load) => load())).toBe('applied');

    const stored = async (sourceSystem: string) =>
      (
        await pool.query<{ external_id: string; columns: string }>(
          `SELECT external_id, (name, address, latitude, longitude, time_windows, service_duration_minutes, priority,
                                tags, metadata, last_import_job_id, last_item_index)::text AS columns
             FROM targets WHERE tenant_id = $1 AND source_system = $2 ORDER BY external_id COLLATE "C"`,
          [caller.tenantId, sourceSystem],
        )
      ).rows;
    const [fromJson, fromRows] = [await stored('v1'), await stored('v2')];
    expect(fromJson.length).toBe(new Set(items.map((i) => i.target.externalId)).size);
    expect(fromRows).toEqual(fromJson);

    // The generator did reach what the formats treat specially (the comparison is not vacuous).
    const all = fromRows.map((r) => r.columns).join('');
    for (const special of ['\\\\', '\\n', '\\t', '\\r', 'NULL', '{', '🏠']) expect(all).toContain(special);
    expect(fromRows.some((r) => r.external_id.includes('\t'))).toBe(true);
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
        return decodeChunk(asMessage(named ? value.replace(/"itemCount":\d+/, `"itemCount":${named}`) : value));
      };
      const targets = Array.from({ length: 20 }, (_, i) => ({ ...generatedTarget(i), externalId: `leak-${i}` }));

      expect(await applyChunk(onePool, await chunkOf('first', targets.slice(0, 10)), (l) => l())).toBe('applied');
      expect(await staged()).toBe(0);
      const refused = applyChunk(onePool, await chunkOf('refused', targets.slice(10), 11), (l) => l());
      await expect(refused).rejects.toThrow(PermanentMessageError);
      expect(await staged()).toBe(0);
      expect(await applyChunk(onePool, await chunkOf('second', targets.slice(10)), (l) => l())).toBe('applied');

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
