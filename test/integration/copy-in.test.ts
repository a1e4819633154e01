import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool, type PoolClient } from '../../src/shared/db/pool.js';
import { copyIn } from '../../src/workers/inbound/copy-in.js';

// The inbound worker's COPY sends statement, data and CopyDone in one round trip (copy-in.ts).
// What must hold on a real server: rows counted, a statement before the COPY run in the same
// message, and after any refusal (before copy mode or during it) the connection answers the
// next query as usual, the data it had sent ahead dropped by the server.

const databaseUrl = Object.assign(new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect'), {
  pathname: '/postgres',
}).href;
let pool: Pool;
let client: PoolClient;

beforeAll(async () => {
  pool = createPool(databaseUrl, 1, 'copy-in-test');
  client = await pool.connect();
  await client.query('CREATE TEMP TABLE copied (n int PRIMARY KEY, label text NOT NULL)');
});
afterAll(async () => {
  client?.release(true);
  await pool?.end();
});

const rows = (...ns: number[]) => Buffer.from(ns.map((n) => `${n}\tlabel ${n}\n`).join(''));
const stored = async () => (await client.query<{ n: number }>('SELECT n FROM copied ORDER BY n')).rows.map((r) => r.n);

describe('copyIn', () => {
  it('copies a buffer and says how many rows it read; a big one too', async () => {
    expect(await copyIn(client, 'COPY copied FROM STDIN', rows(1, 2, 3))).toBe(3);
    const many = Array.from({ length: 50_000 }, (_, i) => 100 + i);
    expect(await copyIn(client, 'COPY copied FROM STDIN', rows(...many))).toBe(many.length);
    expect((await stored()).length).toBe(3 + many.length);
    await client.query('TRUNCATE copied');
  });

  it('runs the statements before the COPY in the same message: a savepoint to roll back to', async () => {
    await client.query('BEGIN');
    try {
      await copyIn(
        client,
        'INSERT INTO copied VALUES (1, $$kept$$); SAVEPOINT before_copy; COPY copied FROM STDIN',
        rows(2),
      );
      await expect(copyIn(client, 'SAVEPOINT again; COPY copied FROM STDIN', rows(3, 1))).rejects.toMatchObject({
        code: '23505', // unique violation, in copy mode
      });
      await client.query('ROLLBACK TO SAVEPOINT again');
      expect(await stored()).toEqual([1, 2]);
    } finally {
      await client.query('COMMIT');
    }
    expect(await stored()).toEqual([1, 2]);
    await client.query('TRUNCATE copied');
  });

  it('after a refusal before copy mode the data sent ahead is dropped and the connection serves on', async () => {
    await expect(copyIn(client, 'COPY no_such_table FROM STDIN', rows(1))).rejects.toMatchObject({ code: '42P01' });
    // Also when an earlier statement of the message fails (the COPY never starts).
    await expect(copyIn(client, 'SELECT 1/0; COPY copied FROM STDIN', rows(1))).rejects.toMatchObject({
      code: '22012',
    });
    expect((await client.query('SELECT 41 + 1 AS n')).rows).toEqual([{ n: 42 }]);
    expect(await stored()).toEqual([]);
  });

  it('a row that does not parse fails the COPY with its error, and the connection serves on', async () => {
    await expect(
      copyIn(client, 'COPY copied FROM STDIN', Buffer.concat([rows(1), Buffer.from('not a number\tx\n'), rows(2)])),
    ).rejects.toMatchObject({ code: '22P02' });
    expect(await copyIn(client, 'COPY copied FROM STDIN', rows(5))).toBe(1);
    expect(await stored()).toEqual([5]);
  });
});
