import pg from 'pg';
import { isPostgresUnavailable } from './errors.js';

// Return NUMERIC and BIGINT columns as strings (pg's default) and convert at the edge,
// where the DTO says which JS type a field has: int8 ids can exceed 2^53.
export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** A pool or one of its clients: what a single statement needs. */
export type Queryable = Pick<pg.Pool, 'query'>;

export type PoolOptions = {
  /** Told about a connection that failed (idle in the pool or checked out); never throws. */
  onConnectionError?: (err: Error) => void;
  /** How long pool.connect() waits for a free connection before it fails. */
  connectionTimeoutMs?: number;
  /** PostgreSQL's statement_timeout on every connection (the server stops longer statements). */
  statementTimeoutMs?: number;
  /**
   * How long a statement may go unanswered before it fails here ("Query read timeout", which
   * isPostgresUnavailable counts as PostgreSQL not serving) and its connection is given up. The
   * server's statement_timeout cannot bound this: a commit waiting for a synchronous standby, or
   * a server that vanished without closing the connection, never answers at all.
   */
  queryTimeoutMs?: number;
  /** Other PostgreSQL settings of every connection, sent at connect (startup `options`). */
  settings?: Record<string, string>;
};

/**
 * A pool whose connections never take the process down: pg emits 'error' on a client whose
 * connection dies (PostgreSQL restarted, 57P01, "Connection terminated unexpectedly"); without a
 * listener on the checked-out client that is an unhandled 'error' event and the process exits.
 * The query in flight still fails (and the caller answers 503 or retries); the pool drops the
 * broken client when it is released.
 */
export function createPool(databaseUrl: string, max: number, applicationName: string, options: PoolOptions = {}): Pool {
  const report = (err: Error) => {
    // pg-pool hangs the whole client (its connection, parser state) on an idle client's error:
    // a log line must not carry it.
    delete (err as { client?: unknown }).client;
    options.onConnectionError?.(err);
  };
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    application_name: applicationName,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    ...(options.queryTimeoutMs ? { query_timeout: options.queryTimeoutMs } : {}),
    ...(options.settings ? { options: startupOptions(options.settings) } : {}),
  });
  pool.on('error', report); // an idle client's connection failed
  pool.on('connect', (client) => client.on('error', report)); // a checked-out client's did
  return pool;
}

/** `-c name=value` for each setting (values are ours: names and numbers, no spaces to escape). */
const startupOptions = (settings: Record<string, string>) =>
  Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');

/** Runs fn in one transaction on one connection: commit on success, rollback on any error. */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return transactionOn(await pool.connect(), fn);
}

/**
 * What to hand client.release() after a statement on it failed with err: err itself (the pool
 * destroys the connection) when it says PostgreSQL is not serving writes there
 * (isPostgresUnavailable), else undefined (the connection goes back to the pool). A connection
 * that answered 25006 may lead to an old primary kept reachable read-only after a failover: the
 * server answers, so pg-pool would keep it, and every transaction on it would fail for good.
 * (pg-pool's own pool.query destroys the connection after any error.)
 */
export const unusableAfter = (err: unknown): Error | undefined =>
  isPostgresUnavailable(err) ? (err instanceof Error ? err : new Error(String(err))) : undefined;

/**
 * Ends the transaction a failed statement left open on client, and says what to hand
 * client.release(): undefined (the connection goes back to the pool) after a ROLLBACK, else the
 * error that makes the pool destroy it. A connection that said PostgreSQL is not serving on it
 * (unusableAfter) is not rolled back: the server rolls back when the connection closes, and a
 * ROLLBACK would queue behind a statement still unanswered (a query timeout) and wait as long.
 */
export async function abandonTransaction(client: PoolClient, err: unknown): Promise<Error | undefined> {
  const broken = unusableAfter(err);
  if (broken) return broken;
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (rollbackErr) {
    return rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
  }
}

/**
 * Runs fn in one transaction on a connection just checked out, and releases it: commit on
 * success, rollback on any error (abandonTransaction: a connection PostgreSQL is not serving on,
 * or whose rollback failed, is destroyed rather than returned to the pool).
 */
export async function transactionOn<C extends PoolClient, T>(client: C, fn: (client: C) => Promise<T>): Promise<T> {
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    broken = await abandonTransaction(client, err);
    throw err;
  } finally {
    client.release(broken);
  }
}
