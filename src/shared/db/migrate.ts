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

/** Applies pending migrations, each run in one transaction; concurrent callers queue up. */
export async function migrateUp(databaseUrl: string, log: (msg: string) => void = () => undefined): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLockId]);
    const applied = await runner({
      dbClient: client,
      dir: migrationsDir,
      direction: 'up',
      migrationsTable: 'pgmigrations',
      // A migration merged from another branch with a lower number still applies after higher ones.
      checkOrder: false,
      singleTransaction: true,
      noLock: true,
      log,
    });
    return applied.map((m) => m.name);
  } finally {
    await client.end(); // ends the session, which releases the advisory lock
  }
}
