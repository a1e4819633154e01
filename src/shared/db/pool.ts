import pg from 'pg';

// Return NUMERIC and BIGINT columns as strings (pg's default) and convert at the edge,
// where the DTO says which JS type a field has: int8 ids can exceed 2^53.
export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export function createPool(databaseUrl: string, max: number, applicationName: string): Pool {
  return new pg.Pool({
    connectionString: databaseUrl,
    max,
    application_name: applicationName,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
  });
}

/** Runs fn in one transaction on one connection: commit on success, rollback on any error. */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
