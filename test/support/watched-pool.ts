import pg from 'pg';
import type { Pool } from '../../src/shared/db/pool.js';

/**
 * Called after each statement a watched connection completes (promise form: what a dispatcher's
 * transactions use); the statement's caller gets its result only once this resolves, so a test
 * can hold a dispatcher back right after a statement.
 */
export type StatementHook = (text: string, result: pg.QueryResult) => void | Promise<void>;

/**
 * A pool for a dispatcher under test whose connections call `hook` after each statement. Set as
 * the pool's Client class, so it holds for any pool made from this one's options too (the
 * dispatcher may open connections of its own for claims or leases).
 */
export function watchedPool(url: string, name: string, hook: StatementHook): Pool {
  class Watched extends pg.Client {}
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  (Watched.prototype as unknown as { query: typeof query }).query = function (this: pg.Client, ...args: unknown[]) {
    const result = query.apply(this, args);
    // a statement's text, or a (named) query config's
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string' || !(result instanceof Promise)) return result; // callback form: untouched
    return result.then(async (r: pg.QueryResult) => {
      await hook(text, r);
      return r;
    });
  };
  const pool = new pg.Pool({ connectionString: url, max: 4, application_name: name, Client: Watched });
  pool.on('error', () => undefined);
  return pool;
}

/** A watched pool that counts the statements (`statement`, e.g. a claim) its connections complete. */
export function claimCountingPool(url: string, name: string, statement: string): { pool: Pool; claims: () => number } {
  let claims = 0;
  const pool = watchedPool(url, name, (text) => {
    if (text === statement) claims++;
  });
  return { pool, claims: () => claims };
}
