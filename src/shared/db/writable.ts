import type { Pool, Queryable } from './pool.js';

/**
 * Whether the server a connection reaches accepts writes, in one cheap statement: false on a
 * standby (in recovery) and on a primary whose transactions default to read-only
 * (default_transaction_read_only, as an old primary kept reachable after a failover, or a
 * database or role demoted so). `SELECT 1` answers on both, so a probe of it calls them healthy.
 * transaction_read_only is that of the statement's own (implicit) transaction, so it reflects
 * the session's default as the server sees it now.
 */
export const writableSql = `SELECT pg_is_in_recovery() AS in_recovery, current_setting('transaction_read_only') = 'on' AS read_only`;

/**
 * The server answers but does not accept writes. Carries SQLSTATE 25006 (read_only_sql_transaction),
 * what a write there fails with, so isPostgresUnavailable classifies it as every such error is:
 * PostgreSQL is not serving writes here now, and the connection that said so is not kept.
 */
export class PostgresReadOnlyError extends Error {
  override name = 'PostgresReadOnlyError';
  readonly code = '25006';
}

/** Resolves when the server behind db accepts writes; else rejects with PostgresReadOnlyError (or the query's own error). */
export async function assertWritable(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ in_recovery: boolean; read_only: boolean }>(writableSql);
  const [state] = rows;
  if (state?.in_recovery) {
    throw new PostgresReadOnlyError(
      'PostgreSQL is read-only: the server is in recovery (a standby, or a demoted primary), writes would fail (25006)',
    );
  }
  if (state?.read_only) {
    throw new PostgresReadOnlyError(
      'PostgreSQL is read-only: transactions there default to read-only (default_transaction_read_only: an old primary after a failover, or a demoted database), writes would fail (25006)',
    );
  }
}

/**
 * The readiness and health probe of PostgreSQL: assertWritable on a connection of pool. A
 * connection on which it failed (read-only, or any error, as pool.query does) is destroyed, not
 * returned, so the next probe, and the next write, connect anew (through a proxy or DNS that now
 * leads to the new primary) instead of reusing one that leads to the old one.
 */
export async function checkWritable(pool: Pool): Promise<void> {
  const client = await pool.connect();
  let unusable: Error | undefined;
  try {
    await assertWritable(client);
  } catch (err) {
    unusable = err instanceof Error ? err : new Error(String(err));
    throw err;
  } finally {
    client.release(unusable);
  }
}
