// A benchmark run's own database on the server of DATABASE_URL (default local), created and
// migrated by the benchmark and dropped at its end, so runs never share or leave data.
import pg from 'pg';

export type BenchDatabase = { name: string; url: string; drop(log: (line: string) => void): Promise<void> };

export function benchDatabase(name: string): BenchDatabase {
  const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // Dropped from the server's `postgres` database: DATABASE_URL's own need not exist.
  const maintenance = new URL(serverUrl);
  maintenance.pathname = '/postgres';
  return {
    name,
    url: url.toString(),
    async drop(log) {
      const admin = new pg.Client({ connectionString: maintenance.toString() });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (err) {
        log(`could not drop database ${name}: ${(err as Error).message}; drop it by hand`);
      } finally {
        await admin.end().catch(() => undefined);
      }
    },
  };
}
