import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgresUnavailable } from '../../src/shared/db/errors.js';
import { createPool, inTransaction, type Pool } from '../../src/shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// Issue 40: a statement PostgreSQL does not answer (a commit waiting for a synchronous standby that
// is gone, a server that vanished without closing the connection) fails after the pool's query
// timeout as "PostgreSQL not serving", and the connection it hangs on is given up, not reused.
// pg_sleep (10× the timeout) stands in for the statement that is not answered.
let db: TestDatabase;
let pool: Pool;
const lost: Error[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, 'query-timeout-test', {
    queryTimeoutMs: 300,
    onConnectionError: (err) => lost.push(err),
  });
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

describe('a statement left unanswered', () => {
  it('fails as PostgreSQL unavailable and its connection is destroyed, not returned to the pool', async () => {
    const held = await pool.connect();
    const heldPid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    held.release();

    const err = await inTransaction(pool, (tx) => tx.query('SELECT pg_sleep(3)')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('Query read timeout');
    expect(isPostgresUnavailable(err)).toBe(true);

    // The next transaction gets a new connection (the old one, still running pg_sleep, is gone
    // from the pool) and works.
    const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    expect(rows[0]!.pid).not.toBe(heldPid);
    expect(pool.totalCount).toBe(1);
  });

  it('does not wait for a ROLLBACK behind the statement that timed out (the connection is dropped instead)', async () => {
    const rolledBack: string[] = [];
    const err = await inTransaction(pool, async (tx) => {
      const query = tx.query.bind(tx);
      // Record every statement sent on this connection after the one that times out.
      (tx as unknown as { query: typeof query }).query = ((text: string, ...rest: unknown[]) => {
        rolledBack.push(String(text));
        return (query as (...a: unknown[]) => unknown)(text, ...rest);
      }) as typeof query;
      return query('SELECT pg_sleep(3)');
    }).catch((e: unknown) => e);
    expect(isPostgresUnavailable(err)).toBe(true);
    expect(rolledBack).toEqual([]);
  });
});
