import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { ensureDatabase, migrateUp } from '../../src/shared/db/migrate.js';

// A throwaway highly available PostgreSQL, built the way production runs one on its own machines:
// one etcd (Debian's etcd-server) as Patroni's store, two Patroni (Debian's patroni) nodes running
// PostgreSQL 15 with synchronous_mode, and HAProxy routing to whichever node Patroni's REST API
// calls the primary (OPTIONS /primary). The scripts in ./pg-ha (adapted from ../shared/pg-ha, whose
// NOTES.md has the timings measured and the gotchas avoided) install what is missing with apt and
// start everything under a temporary directory of its own, on ports of its own (never the
// machine's cluster on 5432); stop() stops by pid only what they started and removes the directory.

const run = promisify(execFile);
const scripts = fileURLToPath(new URL('./pg-ha/', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type PgHaNode = 1 | 2;
export const otherNode = (n: PgHaNode): PgHaNode => (n === 1 ? 2 : 1);

const superuser = { user: 'postgres', password: 'pgha-super' };

/** Why this machine cannot build the cluster (the caller skips with it), or null. */
export function pgHaUnavailable(): string | null {
  if (process.platform !== 'linux') return 'the throwaway Patroni cluster needs Linux';
  if (process.getuid?.() !== 0) return 'the throwaway Patroni cluster needs root (it runs PostgreSQL as postgres)';
  if (!existsSync('/usr/lib/postgresql/15/bin/postgres')) return 'no PostgreSQL 15 server binaries (postgresql-15)';
  const installed = ['/usr/bin/patroni', '/usr/bin/etcd', '/usr/sbin/haproxy'].every((p) => existsSync(p));
  if (!installed && !existsSync('/usr/bin/apt-get')) return 'patroni, etcd-server or haproxy missing and no apt-get';
  return null;
}

/** Whether nothing listens on 127.0.0.1:port now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * n free ports in one block (base … base+n-1), below the kernel's ephemeral range (32768+) and
 * apart from the other throwaways' random ports only by luck: each port is checked free first.
 */
async function freePortBlock(n: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 10_000 + Math.floor(Math.random() * 22_000);
    const ports = Array.from({ length: n }, (_, i) => base + i);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return ports;
  }
  throw new Error(`no block of ${n} free ports found`);
}

export type HaproxyEvent = { at: number; node: PgHaNode; state: 'UP' | 'DOWN'; line: string };

export type ThrowawayPgHa = {
  /** A migrated database `connect`, reached through HAProxy (always the leader). */
  url: string;
  /** The same database on one node directly (bypassing HAProxy). */
  nodeUrl(node: PgHaNode, database?: string): string;
  dir: string;
  ports: { haproxy: number; pg: Record<PgHaNode, number>; api: Record<PgHaNode, number> };
  /** The node whose Patroni holds the leader key (REST /primary 200), or null. */
  leader(): Promise<PgHaNode | null>;
  /** Patroni REST status of a path (primary, replica, sync, …) on a node; 0 when it does not answer. */
  rest(node: PgHaNode, path: string): Promise<number>;
  /** Whether the node's PostgreSQL answers and is not in recovery (accepts writes). */
  writable(node: PgHaNode): Promise<boolean>;
  /** Whether the node's PostgreSQL answers as a hot standby (read-only). */
  readOnly(node: PgHaNode): Promise<boolean>;
  /** Polls until check() is true: Date.now() then, or null after timeoutMs. */
  until(check: () => Promise<boolean>, timeoutMs: number): Promise<number | null>;
  /** Waits until the node other than the leader is the synchronous standby (REST /sync 200): when, or null. */
  waitSyncStandby(timeoutMs: number): Promise<number | null>;
  /** SIGKILL of the leader's postmaster (its Patroni lives on): the node and when. */
  killPrimaryPostmaster(): Promise<{ node: PgHaNode; at: number }>;
  /** `patronictl switchover --force` from the leader to the other node (starts it; `done` resolves when patronictl returns). */
  switchover(): Promise<{ from: PgHaNode; to: PgHaNode; at: number; done: Promise<{ at: number; output: string }> }>;
  /** HAProxy's runtime API (admin socket): one command, its answer. */
  haproxy(command: string): Promise<string>;
  /** Server UP/DOWN transitions HAProxy logged at or after `since` (epoch ms). */
  haproxyEvents(since: number): Promise<HaproxyEvent[]>;
  /** Waits for HAProxy's log to say `node` is UP at or after `since`: when it did, or null. */
  waitHaproxyUp(node: PgHaNode, since: number, timeoutMs: number): Promise<number | null>;
  /** `patronictl list` (for reports). */
  list(): Promise<string>;
  /** The last lines of each node's patroni.log and HAProxy's log (for a failure's report). */
  logTail(lines?: number): Promise<string>;
  /** Stops everything the scripts started (by pid) and removes the directory. */
  stop(): Promise<void>;
};

/** Builds the cluster (installing the packages when missing) and migrates a database `connect` on it. */
export async function startThrowawayPgHa(): Promise<ThrowawayPgHa> {
  const dir = await mkdtemp(join(tmpdir(), 'connect-pgha-'));
  const [etcd, etcdPeer, api1, api2, pg1, pg2, haproxyPort, stats] = await freePortBlock(8);
  const env = {
    ...process.env,
    PGHA_DIR: dir,
    PGHA_SCOPE: `connect-${dir.slice(-6)}`,
    PGHA_ETCD_PORT: String(etcd),
    PGHA_ETCD_PEER_PORT: String(etcdPeer),
    PGHA_API_PORT1: String(api1),
    PGHA_API_PORT2: String(api2),
    PGHA_PG_PORT1: String(pg1),
    PGHA_PG_PORT2: String(pg2),
    PGHA_PORT: String(haproxyPort),
    PGHA_STATS_PORT: String(stats),
    // Never from the caller: it would reach psql in up.sh's last check (not Patroni: env -i).
    PGPASSWORD: superuser.password,
  };
  const script = (name: string, args: string[] = [], timeout = 600_000) =>
    run(join(scripts, name), args, { env, timeout, maxBuffer: 16 << 20 });
  const down = () => script('down.sh', ['--purge'], 120_000).catch(() => undefined);

  const ports = { haproxy: haproxyPort!, pg: { 1: pg1!, 2: pg2! }, api: { 1: api1!, 2: api2! } };
  const nodeDir = (n: PgHaNode) => join(dir, `node${n}`);
  const urlOf = (port: number, database: string) =>
    `postgres://${superuser.user}:${superuser.password}@127.0.0.1:${port}/${database}`;
  const url = urlOf(ports.haproxy, 'connect');

  const query = async (node: PgHaNode, sql: string) => {
    const client = new pg.Client({
      connectionString: urlOf(ports.pg[node], 'postgres'),
      connectionTimeoutMillis: 1000,
      query_timeout: 2000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.query(sql)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const rest = async (node: PgHaNode, path: string) => {
    try {
      const res = await fetch(`http://127.0.0.1:${ports.api[node]}/${path}`, {
        method: 'OPTIONS',
        signal: AbortSignal.timeout(1000),
      });
      return res.status;
    } catch {
      return 0;
    }
  };
  const leader = async (): Promise<PgHaNode | null> => {
    const [a, b] = await Promise.all([rest(1, 'primary'), rest(2, 'primary')]);
    return a === 200 ? 1 : b === 200 ? 2 : null;
  };
  const until = async (check: () => Promise<boolean>, timeoutMs: number): Promise<number | null> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await check().catch(() => false)) return Date.now();
      if (Date.now() > deadline) return null;
      await sleep(100);
    }
  };
  const patronictl = (args: string[]) =>
    run('patronictl', ['-c', join(nodeDir(1), 'patroni.yml'), ...args], { env, timeout: 120_000 });

  const haproxyEvents = async (since: number): Promise<HaproxyEvent[]> => {
    const text = await readFile(join(dir, 'haproxy.log'), 'utf8').catch(() => '');
    const events: HaproxyEvent[] = [];
    // 2026-11-29T01:02:03.456789+00:00 Server pg_primary/node2 is UP, reason: …
    const re =
      /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?([+-]\d\d:\d\d|Z)? .*Server pg_primary\/node([12]) is (UP|DOWN)/;
    for (const line of text.split('\n')) {
      const m = re.exec(line);
      if (!m) continue;
      const at = Date.parse(`${m[1]}${(m[2] ?? '.000').slice(0, 4).padEnd(4, '0')}${m[3] ?? 'Z'}`);
      if (at >= since) events.push({ at, node: Number(m[4]) as PgHaNode, state: m[5] as 'UP' | 'DOWN', line });
    }
    return events;
  };

  try {
    await script('up.sh');
    await ensureDatabase(url);
    await migrateUp(url);
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    const apt = await readFile(join(dir, 'apt.log'), 'utf8').catch(() => '');
    await down();
    throw new Error(
      `throwaway Patroni cluster did not start: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}${apt ? `\napt: ${apt.slice(-2000)}` : ''}`,
    );
  }

  return {
    url,
    nodeUrl: (node, database = 'connect') => urlOf(ports.pg[node], database),
    dir,
    ports,
    leader,
    rest,
    async writable(node) {
      const rows = await query(node, 'SELECT pg_is_in_recovery() AS r').catch(() => null);
      return rows?.[0]?.r === false;
    },
    async readOnly(node) {
      const rows = await query(node, 'SELECT pg_is_in_recovery() AS r').catch(() => null);
      return rows?.[0]?.r === true;
    },
    until,
    async waitSyncStandby(timeoutMs) {
      return until(async () => {
        const l = await leader();
        return l !== null && (await rest(otherNode(l), 'sync')) === 200;
      }, timeoutMs);
    },
    async killPrimaryPostmaster() {
      const node = await leader();
      if (node === null) throw new Error('no leader to kill');
      const pidFile = join(nodeDir(node), 'data', 'postmaster.pid');
      const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ');
      if (!cmdline.includes(join(nodeDir(node), 'data'))) throw new Error(`pid ${pid} is not node${node}'s postmaster`);
      process.kill(pid, 'SIGKILL');
      return { node, at: Date.now() };
    },
    async switchover() {
      const from = await leader();
      if (from === null) throw new Error('no leader to switch over from');
      const to = otherNode(from);
      const at = Date.now();
      const done = patronictl(['switchover', '--leader', `node${from}`, '--candidate', `node${to}`, '--force']).then(
        (r) => ({ at: Date.now(), output: `${r.stdout}${r.stderr}` }),
        (e: { stdout?: string; stderr?: string; message: string }) => ({
          at: Date.now(),
          output: `failed: ${e.message} ${e.stdout ?? ''}${e.stderr ?? ''}`,
        }),
      );
      return { from, to, at, done };
    },
    haproxy(command) {
      return new Promise((resolve, reject) => {
        let answer = '';
        const socket = net.connect(join(dir, 'haproxy.sock'));
        socket.setTimeout(5000, () => socket.destroy(new Error(`HAProxy runtime API: no answer to ${command}`)));
        socket.on('connect', () => socket.end(`${command}\n`));
        socket.on('data', (d) => (answer += d));
        socket.on('error', reject);
        socket.on('close', () => resolve(answer.trim()));
      });
    },
    haproxyEvents,
    async waitHaproxyUp(node, since, timeoutMs) {
      let at: number | null = null;
      await until(async () => {
        at = (await haproxyEvents(since)).find((e) => e.node === node && e.state === 'UP')?.at ?? null;
        return at !== null;
      }, timeoutMs);
      return at;
    },
    async list() {
      return (
        await patronictl(['list']).catch((e: { stdout?: string; message: string }) => ({
          stdout: e.stdout ?? e.message,
        }))
      ).stdout;
    },
    async logTail(lines = 30) {
      const tail = async (file: string) =>
        (await readFile(file, 'utf8').catch(() => '')).split('\n').slice(-lines).join('\n');
      return [
        `--- node1/patroni.log\n${await tail(join(nodeDir(1), 'patroni.log'))}`,
        `--- node2/patroni.log\n${await tail(join(nodeDir(2), 'patroni.log'))}`,
        `--- haproxy.log\n${await tail(join(dir, 'haproxy.log'))}`,
      ].join('\n');
    },
    async stop() {
      await down();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
