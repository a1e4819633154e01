import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';

export const migrationsDir = fileURLToPath(new URL('../../../migrations', import.meta.url));

/** Creates the database named in the URL when it does not exist yet (safe when raced). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!name) throw new Error('DATABASE_URL names no database');
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // duplicate_database: another process won the race
      });
    }
  } finally {
    await admin.end();
  }
}

// node-pg-migrate's own lock fails a second concurrent run ("Another migration is already
// running"); a blocking advisory lock of ours makes concurrent starters wait their turn instead.
const migrationLockId = 4_207_117_301;

/**
 * The migrations not applied yet to the database (all of them on a database without our ledger).
 * Reads only: it neither creates the ledger nor takes a lock.
 */
export async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const known = readdirSync(migrationsDir)
    .filter((f) => /\.(sql|js|cjs|mjs|ts)$/.test(f))
    .map((f) => f.replace(/\.[^.]+$/, ''))
    .sort();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ ledger: boolean }>(
      `SELECT to_regclass('public.pgmigrations') IS NOT NULL AS ledger`,
    );
    if (!rows[0]!.ledger) return known;
    const applied = new Set(
      (await client.query<{ name: string }>('SELECT name FROM pgmigrations')).rows.map((r) => r.name),
    );
    return known.filter((name) => !applied.has(name));
  } finally {
    await client.end();
  }
}

/**
 * How long a migration waits for a table's lock before it gives up and is run again (issue 52).
 * Short, and below PostgreSQL's deadlock_timeout (1 s): under the previous release's traffic a
 * migration that waits for a lock holds up every new statement on that table behind it, and if
 * it is part of a lock cycle it is the migration, not a request or an apply, that gives way.
 */
export const migrationLockTimeoutMs = 200;
/** Runs before giving up: a few minutes of a busy table at most (backoff 0.1 s doubling to 2 s). */
const migrationLockAttempts = 120;

/** The migrations the database's ledger holds, in the order they were applied (none before the first run). */
async function ledger(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ present: boolean }>(
    `SELECT to_regclass('public.pgmigrations') IS NOT NULL AS present`,
  );
  if (!rows[0]!.present) return [];
  return (await client.query<{ name: string }>('SELECT name FROM pgmigrations ORDER BY id')).rows.map((r) => r.name);
}

/** A lock the migration could not take in time, or a deadlock it was chosen to end. */
const isLockConflict = (err: unknown): boolean => {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '55P03' || e.code === '40P01') return true;
  }
  return false;
};

/**
 * Applies pending migrations, each in a transaction of its own (so a migration never holds one
 * table's lock while it waits for another's: under the previous release's traffic the whole set
 * in one transaction deadlocked, test/faults/rolling-upgrade.test.ts), each lock waited for at most
 * migrationLockTimeoutMs; a migration that meets a lock conflict is rolled back and run again
 * after a backoff. Concurrent callers queue up. Returns the migrations this call applied.
 */
export async function migrateUp(databaseUrl: string, log: (msg: string) => void = () => undefined): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLockId]);
    await client.query(`SET lock_timeout = ${migrationLockTimeoutMs}`);
    const before = new Set(await ledger(client));
    for (let attempt = 1; ; attempt++) {
      try {
        await runner({
          dbClient: client,
          dir: migrationsDir,
          direction: 'up',
          migrationsTable: 'pgmigrations',
          // A migration merged from another branch with a lower number still applies after higher ones.
          checkOrder: false,
          singleTransaction: false,
          noLock: true,
          log,
        });
        // What every run applied (a run that met a conflict kept the migrations before it).
        return (await ledger(client)).filter((name) => !before.has(name));
      } catch (err) {
        if (!isLockConflict(err) || attempt >= migrationLockAttempts) throw err;
        // node-pg-migrate leaves the failed migration's transaction open (aborted): end it, or
        // every statement of the next run is refused ("current transaction is aborted").
        await client.query('ROLLBACK');
        // What committed before the conflict stays applied; the next run starts at the migration that gave way.
        log(`migrations: a lock was busy (${(err as Error).message}); running again (attempt ${attempt + 1})`);
        await new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** Math.min(attempt - 1, 5))));
      }
    }
  } finally {
    await client.end(); // ends the session, which releases the advisory lock
  }
}
