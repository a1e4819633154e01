import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export type TestDatabase = { url: string; drop(): Promise<void> };

const serverUrl = (databaseUrl: string, name: string) => {
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

async function onServer<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl(inject('templateDatabaseUrl'), 'postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database of this test file's own, cloned from the template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = new URL(inject('templateDatabaseUrl')).pathname.slice(1);
  const name = `connect_test_${randomBytes(6).toString('hex')}`;
  await onServer(async (client) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        return;
      } catch (err) {
        // 55006: the template is briefly in use by a concurrent clone.
        if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  });
  return {
    url: serverUrl(inject('templateDatabaseUrl'), name),
    drop: () => dropDatabase(serverUrl(inject('templateDatabaseUrl'), 'postgres'), name),
  };
}

/**
 * Drops a database through the server's maintenance database (`maintenanceUrl`). Plain DROP
 * first, while closing connections finish closing (pg's pool.end() resolves before its sockets
 * have closed); FORCE only for stragglers (e.g. of a SIGKILLed process), so no live test
 * connection is cut off mid-teardown (an unhandled 57P01 in the test process).
 */
export async function dropDatabase(maintenanceUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: maintenanceUrl });
  await client.connect();
  try {
    const quoted = pg.escapeIdentifier(name);
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        await client.query(`DROP DATABASE IF EXISTS ${quoted}`);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006') throw err; // in use by other users
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
