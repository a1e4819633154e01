import { execFile } from 'node:child_process';
import { chmod, chown, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureDatabase, migrateUp } from '../../src/shared/db/migrate.js';

const run = promisify(execFile);

/** Where PostgreSQL's server programs live (Debian keeps them outside PATH). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  return ''; // initdb and pg_ctl on PATH
}

export type ThrowawayPostgres = {
  /** URL of a migrated database `connect` on this cluster. */
  url: string;
  port: number;
  /** pg_ctl stop -m fast|immediate: connections are cut, as in a restart or a crash. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
};

/**
 * A PostgreSQL cluster of a test's (or a bench's) own (initdb into a temporary directory, its own
 * port), so a fault test can stop and start it without touching the machine's server, and a bench
 * can measure PostgreSQL's defaults whatever the machine's server is set to. initdb refuses to
 * run as root, so as root the cluster belongs to the `postgres` user.
 */
export async function startThrowawayPostgres({
  tls,
  settings = {},
}: {
  /** Serve TLS with this certificate and key (PEM files; copied into the cluster's directory). */
  tls?: { certFile: string; keyFile: string };
  /** Server settings over the tests' (fsync off, 200 connections), e.g. `{ fsync: 'on' }`. */
  settings?: Record<string, string>;
} = {}): Promise<ThrowawayPostgres> {
  const bin = binDir();
  const program = (name: string) => (bin ? join(bin, name) : name);
  const asRoot = userInfo().uid === 0;
  const dir = await mkdtemp(join(tmpdir(), 'connect-pg-'));
  const dataDir = join(dir, 'data');
  if (asRoot) {
    await chmod(dir, 0o755);
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const as = (cmd: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', cmd, ...args], { timeout: 120_000 })
      : run(cmd, args, { timeout: 120_000 });

  await as(program('initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  // Below the kernel's ephemeral range (32768+), where an outgoing connection may hold the port.
  const port = 10000 + Math.floor(Math.random() * 10000);
  const server = { listen_addresses: '127.0.0.1', fsync: 'off', max_connections: '200', ...settings };
  let options = [`-p ${port} -k ${dir}`, ...Object.entries(server).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
  if (tls) {
    // The server reads its key only when it belongs to it and nobody else may read it.
    const [cert, key] = [join(dir, 'server.crt'), join(dir, 'server.key')];
    await copyFile(tls.certFile, cert);
    await copyFile(tls.keyFile, key);
    await chmod(key, 0o600);
    if (asRoot) {
      const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
      const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
      await Promise.all([chown(cert, uid, gid), chown(key, uid, gid)]);
    }
    options += ` -c ssl=on -c ssl_cert_file=${cert} -c ssl_key_file=${key}`;
  }
  const pgCtl = (...args: string[]) => as(program('pg_ctl'), ['-D', dataDir, '-w', '-t', '120', ...args]);
  const start = async () => {
    await pgCtl('-o', options, '-l', join(dir, 'server.log'), 'start');
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/connect`;
  await ensureDatabase(url);
  await migrateUp(url);
  return {
    url,
    port,
    start,
    stop: async (mode) => {
      await pgCtl('-m', mode, 'stop');
    },
    async destroy() {
      await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
