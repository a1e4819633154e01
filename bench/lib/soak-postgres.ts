// The PostgreSQL server of bench/soak.ts: a cluster of its own (initdb into a temporary directory,
// a port of its own) at PostgreSQL's defaults (autovacuum on, fsync on) plus `settings`, so the
// soak measures what autovacuum does, whatever the machine's server is set to (a CI server may run
// with autovacuum off). As root the cluster belongs to the `postgres` user (initdb refuses root).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

function binDir(): string {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return '';
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : '';
}

export async function startSoakPostgres(settings: Record<string, string>) {
  const bin = binDir();
  const program = (name: string) => (bin ? join(bin, name) : name);
  const asRoot = userInfo().uid === 0;
  const dir = await mkdtemp(join(tmpdir(), 'connect-soak-pg-'));
  const dataDir = join(dir, 'data');
  if (asRoot) {
    await chmod(dir, 0o755);
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    await chown(dir, uid, gid);
  }
  const as = (cmd: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', cmd, ...args], { timeout: 120_000 }) : run(cmd, args);
  await as(program('initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = 10000 + Math.floor(Math.random() * 10000);
  const options = [
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`,
    ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
  ].join(' ');
  const pgCtl = (...args: string[]) => as(program('pg_ctl'), ['-D', dataDir, '-w', '-t', '120', ...args]);
  await pgCtl('-o', options, '-l', join(dir, 'server.log'), 'start');
  return {
    serverUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async destroy() {
      await pgCtl('-m', 'fast', 'stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
