// PostgreSQL's work for one process of a bench (bench/webhooks.ts): CPU seconds of the backends
// serving that process's connections (found by database and application_name in
// pg_stat_activity, read from /proc/<backend pid>/stat: PostgreSQL must run on this machine), and
// the database's commits (pg_stat_database.xact_commit). Reads through a connection to another
// database (the maintenance one), so watching adds no commits to the watched database.
import type pg from 'pg';
import { cpuSeconds } from './processes.js';
import { round } from './stats.js';

export type BackendLoad = {
  seconds: number;
  /** CPU seconds of the watched backends in the window (user + system). */
  backendCpuSeconds: number;
  /** The same per second of the window: cores. */
  backendCores: number;
  /** Distinct backends seen. */
  backends: number;
  /** xact_commit of the whole database in the window (every connection's). */
  commits: number;
  commitsPerSecond: number;
};

/**
 * Starts watching; stop() returns the window's figures. Backends are listed every intervalMs;
 * one that started during the window counts from 0, one that ended counts to its last reading.
 * Commits: PostgreSQL 15 publishes a busy backend's counts at most once a second (an idle one's
 * up to 10 s later), so the count is short by about that much at either end.
 */
export async function watchBackends(
  admin: pg.Client,
  database: string,
  applicationName: string,
  intervalMs = 250,
): Promise<{ stop(): Promise<BackendLoad> }> {
  const started = performance.now();
  const startedAt = new Date();
  const seen = new Map<number, { first: number; last: number }>();
  const commits = async () => {
    await admin.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await admin.query<{ n: string }>(
      'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1',
      [database],
    );
    return Number(rows[0]?.n ?? NaN);
  };
  const sample = async () => {
    const { rows } = await admin.query<{ pid: number; backend_start: Date }>(
      'SELECT pid, backend_start FROM pg_stat_activity WHERE datname = $1 AND application_name = $2',
      [database, applicationName],
    );
    for (const r of rows) {
      const cpu = cpuSeconds(r.pid);
      if (!Number.isFinite(cpu)) continue;
      const s = seen.get(r.pid);
      if (s) s.last = cpu;
      else seen.set(r.pid, { first: r.backend_start >= startedAt ? 0 : cpu, last: cpu });
    }
  };
  const commits0 = await commits();
  await sample();
  let busy: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    busy = busy.then(sample).catch(() => undefined);
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await busy;
      await sample();
      const seconds = (performance.now() - started) / 1000;
      const cpu = [...seen.values()].reduce((sum, s) => sum + (s.last - s.first), 0);
      const n = (await commits()) - commits0;
      return {
        seconds: round(seconds, 2),
        backendCpuSeconds: round(cpu, 2),
        backendCores: round(cpu / seconds, 3),
        backends: seen.size,
        commits: n,
        commitsPerSecond: round(n / seconds, 1),
      };
    },
  };
}
