import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp } from '../../src/shared/db/migrate.js';
import { integrationScopes } from '../../src/shared/scopes.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

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

  it('re-running migrations, even concurrently, applies nothing twice', async () => {
    const results = await Promise.all([migrateUp(db.url), migrateUp(db.url)]);
    expect(results).toEqual([[], []]);
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
