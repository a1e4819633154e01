import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp } from '../../src/shared/db/migrate.js';
import { integrationScopes } from '../../src/shared/scopes.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/kafka.js';

let db: TestDatabase;
let client: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await db?.drop();
});

describe('database schema', () => {
  it('seeds exactly the scopes the code knows', async () => {
    const { rows } = await client.query('SELECT name FROM scopes ORDER BY name');
    expect(rows.map((r) => r.name)).toEqual([...integrationScopes].sort());
  });

  it('has the tables retention prunes vacuumed at 2 % dead rows, the rest at the default (issue 51)', async () => {
    const { rows } = await client.query<{ relname: string; reloptions: string[] | null }>(
      `SELECT relname, reloptions FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace`,
    );
    const tuned = rows
      .filter((r) => r.reloptions?.includes('autovacuum_vacuum_scale_factor=0.02'))
      .map((r) => r.relname)
      .sort();
    expect(tuned).toEqual([
      'dead_letter_actions',
      'dead_letters_handled',
      'import_job_chunks',
      'import_jobs',
      'route_suggestions',
      'webhook_attempts',
      'webhook_deliveries',
      'webhook_events',
    ]);
  });

  it('re-running migrations, even concurrently, applies nothing twice', async () => {
    const results = await Promise.all([migrateUp(db.url), migrateUp(db.url)]);
    expect(results).toEqual([[], []]);
  });

  it('gives way to a lock another transaction holds, and applies once it is let go (issue 52)', async () => {
    // The last migration undone, as if this release's migrations met the previous release's traffic.
    await client.query(`DROP INDEX import_jobs_unfinished_idx`);
    await client.query(`DELETE FROM pgmigrations WHERE name = '0030_import_jobs_unfinished_index'`);
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    const said: string[] = [];
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE import_jobs IN ROW EXCLUSIVE MODE'); // a writer's lock, held
      const migrating = migrateUp(db.url, (line) => said.push(line));
      await eventually(() => (said.some((l) => l.includes('a lock was busy')) ? true : undefined), 30_000, 'a retry');
      await holder.query('COMMIT');
      expect(await migrating).toEqual(['0030_import_jobs_unfinished_index']);
    } finally {
      await holder.end();
    }
  });

  it('stores no plaintext API key column', async () => {
    const { rows } = await client.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'api_keys' ORDER BY column_name`,
    );
    expect(rows.map((r) => r.column_name)).toEqual([
      'client_id',
      'created_at',
      'expires_at',
      'id',
      'key_hash',
      'prefix',
      'revoked_at',
    ]);
  });
});
