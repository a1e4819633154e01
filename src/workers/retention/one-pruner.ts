import pg from 'pg';

/**
 * Runs `prune` in one process at a time across every replica: it tries a session advisory lock
 * (`pg_try_advisory_lock`, never waiting) on a connection of its own, opened for the round (not
 * one of the pool's, which may have a single connection the pruning itself needs); one that gets
 * it prunes and lets it go, the others skip the round. A pruner that dies (or whose connection
 * does) leaves no lock behind: PostgreSQL releases it with the session. Resolves with what
 * `prune` returned, or null when another process held the lock.
 */
export async function asTheOnePruner<T>(
  databaseUrl: string,
  lockId: number,
  applicationName: string,
  prune: () => Promise<T>,
): Promise<T | null> {
  const lockHolder = new pg.Client({
    connectionString: databaseUrl,
    application_name: applicationName,
    connectionTimeoutMillis: 10_000,
  });
  lockHolder.on('error', () => undefined); // a lost connection: its lock is gone; the next statement fails
  await lockHolder.connect();
  try {
    const { rows } = await lockHolder.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [lockId]);
    if (!rows[0]?.locked) return null;
    return await prune();
  } finally {
    await lockHolder.end().catch(() => undefined); // ends the session: the lock goes with it
  }
}
