// The workers' phase of bench/inbound.ts and bench/growth.ts: a worker runner process
// (WORKERS=inbound) applies what the gateway queued, timed until every import job is final.
import type pg from 'pg';
import { cpuSeconds, phaseCpu, readMemory, resetPeak, spawnTsx, type Child } from './processes.js';
import { percentiles, round } from './stats.js';

export type ApplyPhaseParams = {
  phase: string;
  pool: pg.Pool;
  /** The broker's pid (phaseCpu), null: every java process. */
  broker: number | null;
  /** The database's name (phaseCpu counts its backends). */
  dbName: string;
  /** The service processes' environment (capacityEnv). */
  env: NodeJS.ProcessEnv;
  /** WORKER_APPLY_CONCURRENCY as the workers will read it (how full their slots were). */
  applyConcurrency: number;
  tenantId: string;
  afterJobId: number;
  jobs: number;
  timeoutMs: number;
  /** The workers' Node options (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** Told the runner when it starts and null when it stopped, so the caller's teardown can stop it. */
  onRunner?: (runner: Child | null) => void;
};

export type ApplyPhase = Awaited<ReturnType<typeof applyPhase>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A worker runner process (WORKERS=inbound) applies what is queued, until every import job of the
 * tenant with an id above `afterJobId` (`jobs` of them) is final. Timed from the first chunk's
 * transaction (min import_jobs.started_at of those jobs); its chunks by how they were applied are
 * read from its /metrics before it stops.
 */
export async function applyPhase(p: ApplyPhaseParams) {
  const { phase, pool, tenantId, afterJobId, jobs } = p;
  await pool.query('CHECKPOINT').catch(() => undefined); // not allowed: continue without
  const cpu = phaseCpu(p.broker, p.dbName);
  const spawnedAt = Date.now();
  // Any free port for its /metrics: a running stack's workers may hold the default.
  // Info level (the service's default): one "message applied" line per chunk, with its duration.
  const runner = spawnTsx(
    'src/workers/runner.ts',
    { ...p.env, LOG_LEVEL: 'info', WORKERS: 'inbound', WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0' },
    'workers',
    p.nodeArgs ?? [],
  );
  p.onRunner?.(runner);
  const metricsUrl = (await runner.waitFor(/workers: metrics on (http:\/\/[^\s"]+)/))[1]!;
  await runner.waitFor(/workers: running/);
  const readyAt = Date.now();
  const peakReset = resetPeak(runner.pid);
  // From here: the process's start (loading and compiling its modules, about 2 CPU seconds) is not
  // the apply's cost.
  const cpuAtReady = cpuSeconds(runner.pid);
  const deadline = Date.now() + p.timeoutMs;
  let progress: { final: number; completed: number; applied: number; failed: number; first: Date | null };
  for (;;) {
    progress = (
      await pool.query(
        `SELECT count(*) FILTER (WHERE status IN ('Completed', 'CompletedWithErrors', 'Failed'))::int AS final,
                count(*) FILTER (WHERE status = 'Completed')::int AS completed,
                coalesce(sum(applied_count), 0)::int AS applied, coalesce(sum(failed_count), 0)::int AS failed,
                min(started_at) AS first
           FROM import_jobs WHERE tenant_id = $1 AND id > $2`,
        [tenantId, afterJobId],
      )
    ).rows[0];
    if (progress.final >= jobs) break;
    if (Date.now() > deadline) throw new Error(`${phase}: only ${progress.final} of ${jobs} jobs final in time`);
    if (runner.child.exitCode !== null) throw new Error(`${phase}: workers exited:\n${runner.output().slice(-3000)}`);
    await sleep(50);
  }
  const doneAt = Date.now();
  const phaseCpuUsed = cpu.end([runner.pid]);
  const workerCpu = cpuSeconds(runner.pid) - cpuAtReady;
  const workerMem = readMemory(runner.pid);
  const chunks = chunkOutcomes(await (await fetch(`${metricsUrl}/metrics`)).text());
  await runner.stop();
  p.onRunner?.(null);
  const seconds = (doneAt - progress.first!.getTime()) / 1000;
  const rowsInTable = (
    await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM targets WHERE tenant_id = $1', [tenantId])
  ).rows[0]!.n;
  return {
    targets: progress.applied,
    failedTargets: progress.failed,
    jobs,
    completedJobs: progress.completed,
    rowsInTable,
    seconds: round(seconds, 3),
    targetsPerSecond: round(progress.applied / seconds),
    fromProcessStart: {
      seconds: round((doneAt - spawnedAt) / 1000, 3),
      targetsPerSecond: round(progress.applied / ((doneAt - spawnedAt) / 1000)),
    },
    fromGroupJoined: {
      seconds: round((doneAt - readyAt) / 1000, 3),
      targetsPerSecond: round(progress.applied / ((doneAt - readyAt) / 1000)),
    },
    workerCpuSeconds: round(workerCpu, 2),
    workerRssMiB: round(workerMem?.hwmMiB ?? NaN, 0),
    workerPeakFrom: peakReset ? 'VmHWM (reset when the workers ran, before applying)' : 'VmHWM (since start)',
    applyMs: chunkApplyStats(runner.output(), seconds, p.applyConcurrency),
    /** worker_inbound_chunks_total by outcome: copied, upserted, duplicate, orphan. */
    chunks,
    cpu: phaseCpuUsed,
  };
}

/** "N copied, M upserted" (and duplicates or orphans, if any). */
export function chunkMix(chunks: Record<string, number>): string {
  return Object.entries(chunks)
    .filter(([outcome, n]) => n > 0 || outcome === 'copied' || outcome === 'upserted')
    .map(([outcome, n]) => `${n} ${outcome}`)
    .join(', ');
}

/** worker_inbound_chunks_total's samples by outcome, from a /metrics text. */
function chunkOutcomes(metrics: string): Record<string, number> {
  const found: Record<string, number> = {};
  for (const m of metrics.matchAll(/^worker_inbound_chunks_total\{outcome="(\w+)"\} (\d+)$/gm))
    found[m[1]!] = Number(m[2]);
  return found;
}

/**
 * Per-chunk apply times from the workers' "message applied" log lines (pino JSON, durationMs),
 * and how full the partition slots were: the applies' total time over the phase's time the
 * slots (WORKER_APPLY_CONCURRENCY) offered.
 */
function chunkApplyStats(output: string, phaseSeconds: number, slots: number) {
  const durations: number[] = [];
  for (const line of output.split('\n')) {
    if (!line.includes('"message applied"')) continue;
    try {
      const ms = (JSON.parse(line) as { durationMs?: unknown }).durationMs;
      if (typeof ms === 'number') durations.push(ms);
    } catch {
      // not a JSON line
    }
  }
  const busy = durations.reduce((sum, ms) => sum + ms, 0) / 1000;
  return { chunks: durations.length, ...percentiles(durations), slots, slotsBusy: round(busy / phaseSeconds, 2) };
}
