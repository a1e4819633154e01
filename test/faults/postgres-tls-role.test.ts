import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../support/throwaway-postgres.js';
import { scaled } from '../support/time-scale.js';
import { finishScenario, killAllFleets, startScenario, testPool } from './harness.js';

// Issue 15: PostgreSQL over TLS with sslmode=verify-full, and the service running as a role that
// may only read and write rows (ops/postgres/service-role.sql), while migrations ran as the owner.
const run = promisify(execFile);
let dir: string;
let postgres: ThrowawayPostgres;
let owner: pg.Pool;
const role = 'connect_service';

/** A CA and a certificate for 127.0.0.1 signed by it; a second, unrelated CA. */
async function makeCertificates(into: string) {
  const ssl = (...args: string[]) => run('openssl', args, { cwd: into });
  await ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=pg-test-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  await ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=other-ca',
    '-keyout',
    'other.key',
    '-out',
    'other-ca.pem',
  );
  await ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
  );
  await writeFile(join(into, 'server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'server.ext',
    '-out',
    'server.crt',
  );
}

const serviceUrl = (host = '127.0.0.1', ca = join(dir, 'ca.pem')) =>
  `postgres://${role}:unused@${host}:${postgres.port}/connect?sslmode=verify-full&sslrootcert=${ca}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'connect-pg-tls-'));
  await makeCertificates(dir);
  postgres = await startThrowawayPostgres({
    tls: { certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key') },
  });
  owner = testPool(postgres.url);
  await owner.query(`CREATE ROLE ${role} LOGIN`);
  // The documented grant, run as the owner with psql as a user would.
  await run('psql', [postgres.url, '-q', '-v', `service_role=${role}`, '-f', 'ops/postgres/service-role.sql']);
}, scaled(300_000));

afterAll(async () => {
  await killAllFleets();
  await owner?.end();
  await postgres?.destroy();
  await rm(dir, { recursive: true, force: true });
}, scaled(120_000));

async function asService<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const sqlState = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string; message: string }) => err.code ?? err.message,
  );

describe('PostgreSQL over verified TLS, as a role that only reads and writes rows', () => {
  it(
    'serves every kind of write and read; the role can change no schema',
    async () => {
      const s = await startScenario({
        name: 'pg-tls-service-role',
        pool: owner,
        databaseUrl: serviceUrl(),
        brokers: inject('kafkaBrokers'),
        workers: { workers: '' }, // every kind, the webhook dispatcher included
      });
      const acked = await s.load.waitForAcks(30, 0, 120_000);
      const { rows } = await owner.query(
        `SELECT count(*)::int AS connections, count(*) FILTER (WHERE s.ssl)::int AS tls
         FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = $1`,
        [role],
      );
      const report = await finishScenario(s);

      expect.soft(acked, 'writes acknowledged').toBe(true);
      expect.soft(rows[0].connections, 'connections of the service role').toBeGreaterThan(0);
      expect.soft(rows[0].tls, 'of which over TLS').toBe(rows[0].connections);
      expect.soft(report.unexpectedExits).toEqual([]);
      expect.soft(report.converged).toBe(true);
      expect.soft(report.oracle).toEqual(report.expected);
      expect.soft(report.counts.otherNon2xx, `statuses other than 2xx/503/429: ${report.counts.otherStatuses}`).toBe(0);

      const refused = await asService(serviceUrl(), async (c) => ({
        create: await sqlState(c.query('CREATE TABLE intruder (i int)')),
        drop: await sqlState(c.query('DROP TABLE import_jobs')),
        alter: await sqlState(c.query('ALTER TABLE import_jobs ADD COLUMN x int')),
        ledger: await sqlState(c.query('SELECT * FROM pgmigrations')),
      }));
      expect(refused).toEqual({ create: '42501', drop: '42501', alter: '42501', ledger: '42501' });
    },
    scaled(600_000),
  );

  it(
    'verify-full refuses a server whose certificate another CA signed, or that names another host',
    async () => {
      const otherCa = await sqlState(
        asService(serviceUrl('127.0.0.1', join(dir, 'other-ca.pem')), (c) => c.query('SELECT 1')),
      );
      const otherName = await sqlState(asService(serviceUrl('localhost'), (c) => c.query('SELECT 1')));
      const right = await sqlState(asService(serviceUrl(), (c) => c.query('SELECT 1')));
      expect(otherCa).toMatch(/^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)$/);
      expect(otherName).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
      expect(right).toBe('ok');
    },
    scaled(60_000),
  );
});
