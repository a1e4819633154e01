// `npm run bench:fairness`: what one tenant's bulk backlog does to another tenant's small imports,
// and how two bulk tenants share the workers (issue 24). Brings up what it needs (the local broker
// via scripts/kafka up, a throwaway database, tenants A, B and C, its own topic prefix), runs the
// gateway and the inbound workers as deployed (a runner for WORKERS=inbound and one for
// WORKERS=inbound-express, the small imports' kind) as their own processes and the bulk
// uploads as bench/lib/load.ts processes (8 connections, batches of 1,000). A and C have the quota
// an operator would raise for a large ERP customer (their clients' upload quota 1 GiB/s); every
// client's rate limit is raised (B polls its import job every 10 ms). Phases:
//
//   quiet    B alone: one single-target import every BENCH_SMALL_EVERY_MS (not waiting for the previous one),
//            each timed from its POST to its import job's final status (GET every 10 ms, every
//            50 ms after 2 s), for BENCH_PHASE_SECONDS.
//   backlog  the workers are stopped while A uploads BENCH_BACKLOG_TARGETS (all accepted, 200),
//            as after a burst faster than the workers or an outage of them; then a new worker
//            runner starts and, from its first applied chunk of A, B is timed as in quiet for
//            BENCH_PHASE_SECONDS while A's backlog drains (ending early when less than a tenth of it
//            is left; the run says so); A's apply throughput is counted from
//            import_jobs.applied_count over the same window, and over the whole drain.
//   share    the workers are stopped while A and C upload BENCH_SHARE_TARGETS each at the same
//            time (their messages interleave in the topic); a new worker runner applies them;
//            each tenant's applied count is read every second, and the share A/C is taken over
//            the time both still had a backlog.
//
// Prints B's p50/p90/p99/max in both phases side by side with the ratio, where B's time went
// (POST; created → the worker's transaction started, i.e. produce, fetch and the wait in the
// worker's queue; the express apply itself, from the workers' log), A's throughput, the share, and
// the goals; writes bench/results/fairness-<time>.json and -latest.json. Asserts nothing. The
// issue's backlog of 10M targets: BENCH_BACKLOG_TARGETS=10000000 (about 3 GB in the topic and 10
// minutes of upload and drain on 2 cores). Options (env): BENCH_PHASE_SECONDS (20),
// BENCH_BACKLOG_TARGETS (1,000,000), BENCH_SHARE_TARGETS (200,000), BENCH_BULK_CONCURRENCY (8),
// BENCH_SMALL_EVERY_MS (500: B's pace; a shorter one gives a p99 of more samples, 120 per minute at 500),
// BENCH_LOG_DIR (as bench/inbound.ts), DATABASE_URL, KAFKA_BROKERS (127.0.0.1:9092), and the
// service's own settings (WORKER_APPLY_CONCURRENCY, INBOUND_EXPRESS_MAX_TARGETS, ...).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { deleteRunArtifacts } from './lib/kafka-admin.js';
import type { LoadParams, LoadResult } from './lib/load.js';
import {
  benchGatewayNodeFlags,
  brokerPid,
  machineCores,
  machineFacts,
  runBench,
  phaseCpu,
  runForResult,
  spawnTsx,
  type Child,
  type PhaseCpu,
} from './lib/processes.js';
import { percentiles, round } from './lib/stats.js';
import { envInt } from './lib/env.js';

const opts = {
  phaseSeconds: envInt('BENCH_PHASE_SECONDS', 20),
  backlogTargets: envInt('BENCH_BACKLOG_TARGETS', 1_000_000),
  shareTargets: envInt('BENCH_SHARE_TARGETS', 200_000),
  bulkConcurrency: envInt('BENCH_BULK_CONCURRENCY', 8),
  batchSize: 1000,
  /** Batches per load process: its bodies are built in memory first (about 0.4 GB per 1,000 batches). */
  roundBatches: 250,
  smallEveryMs: envInt('BENCH_SMALL_EVERY_MS', 500),
};
const goals = { p99Ratio: 2, p99Ms: 500, shareLow: 0.8, shareHigh: 1.25 };

const repoRoot = new URL('..', import.meta.url).pathname;
const runId = randomBytes(4).toString('hex');
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const dbName = `connect_bench_fairness_${runId}`;
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/${dbName}`;
const databaseUrl = dbUrl.toString();
const brokersEnv = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
const topicPrefix = `bench-fairness-${runId}.`;
const childEnv: NodeJS.ProcessEnv = {
  ...process.env,
  DATABASE_URL: databaseUrl,
  KAFKA_BROKERS: brokersEnv,
  KAFKA_TOPIC_PREFIX: topicPrefix,
  LOG_LEVEL: 'warn',
};
const serviceConfig = loadConfig(childEnv);
const brokers = serviceConfig.kafka.brokers;
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const finalStatuses = new Set(['Completed', 'CompletedWithErrors', 'Failed']);

type Tenant = { tenantId: string; clients: Record<string, { apiKey: string; clientId: string }> };
/** One small import: POST → final status (ms), the POST alone, and how it ended. */
type Small = { ms: number; postMs: number; importJobId: number | null; outcome: string };

async function smallImport(base: string, apiKey: string, externalId: string): Promise<Small> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const started = performance.now();
  const since = () => performance.now() - started;
  let postMs = NaN;
  try {
    const res = await fetch(new URL('/api/v1/inbound/targets', base), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        sourceSystem: 'small',
        externalId,
        name: 'Small import',
        coordinates: { latitude: 52.5, longitude: 13.4 },
      }),
      signal: AbortSignal.timeout(60_000),
    });
    postMs = since();
    const body = (await res.json()) as { importJobId?: number; status?: string };
    if (res.status !== 200 || !body.importJobId)
      return { ms: since(), postMs, importJobId: null, outcome: `${res.status}` };
    const jobUrl = new URL(`/api/v1/import-jobs/${body.importJobId}`, base);
    let status = body.status ?? '';
    while (!finalStatuses.has(status)) {
      if (since() > 60_000) return { ms: since(), postMs, importJobId: body.importJobId, outcome: 'timeout' };
      await sleep(since() < 2000 ? 10 : 50);
      const poll = await fetch(jobUrl, { headers, signal: AbortSignal.timeout(60_000) });
      status = poll.status === 200 ? ((await poll.json()) as { status: string }).status : (await poll.text(), '');
    }
    return { ms: since(), postMs, importJobId: body.importJobId, outcome: status };
  } catch (err) {
    return { ms: since(), postMs, importJobId: null, outcome: (err as Error).name };
  }
}

/**
 * B's small imports for `seconds` (or until `enough()`), one every smallEveryMs on a fixed schedule
 * (open loop: a slow one does not delay the next).
 */
async function smallImports(
  base: string,
  apiKey: string,
  tag: string,
  seconds: number,
  enough = () => false,
): Promise<Small[]> {
  const t0 = Date.now();
  const pending: Promise<Small>[] = [];
  for (let n = 0; Date.now() - t0 < seconds * 1000 && !enough(); n++) {
    pending.push(smallImport(base, apiKey, `b-${runId}-${tag}-${n}`));
    await sleep(Math.max(0, t0 + (n + 1) * opts.smallEveryMs - Date.now()));
  }
  return Promise.all(pending);
}

let pool = null as pg.Pool | null;
let gateway = null as Child | null;
/** The two inbound runners: bulk (WORKERS=inbound) and express (WORKERS=inbound-express). */
type Workers = { pids: number[]; expressOutput(): string; stop(): Promise<unknown> };
let workers = null as Workers | null;

/** A tenant's import jobs after `afterJob`: accepted and applied targets, jobs, final jobs. */
async function progress(tenantId: string, afterJob: number) {
  const { rows } = await pool!.query<{ accepted: number; applied: number; jobs: number; final: number }>(
    `SELECT coalesce(sum(accepted_count), 0)::int AS accepted, coalesce(sum(applied_count + failed_count), 0)::int AS applied,
            count(*)::int AS jobs,
            count(*) FILTER (WHERE status IN ('Completed', 'CompletedWithErrors', 'Failed'))::int AS final
       FROM import_jobs WHERE tenant_id = $1 AND id > $2`,
    [tenantId, afterJob],
  );
  return rows[0]!;
}

const lastJobId = async () =>
  Number((await pool!.query('SELECT coalesce(max(id), 0) AS id FROM import_jobs')).rows[0].id);

/**
 * Uploads `targets` for a tenant in load-process rounds until that many are accepted (answers
 * other than 200 are counted and their batches sent again under new ids).
 */
async function pushBulk(base: string, apiKey: string, tag: string, targets: number, concurrency: number) {
  const statuses: Record<string, number> = {};
  let accepted = 0;
  let seconds = 0;
  for (let round = 0; accepted < targets; round++) {
    if (round > (3 * targets) / opts.batchSize / opts.roundBatches + 3) throw new Error(`${tag}: too many refusals`);
    const params: LoadParams = {
      url: base,
      apiKey,
      runId,
      mode: 'throughput',
      tag: `${tag}${round}-`,
      batches: Math.min(opts.roundBatches, Math.ceil((targets - accepted) / opts.batchSize)),
      warmupBatches: 0,
      batchSize: opts.batchSize,
      concurrency,
      maxSeconds: 600,
      timeoutMs: 60_000,
    };
    const r = await runForResult<LoadResult>(
      'bench/lib/load.ts',
      { ...childEnv, BENCH_LOAD_PARAMS: JSON.stringify(params) },
      `load ${tag}`,
      900_000,
    );
    for (const [s, n] of Object.entries(r.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
    if (r.errors > 0) statuses.error = (statuses.error ?? 0) + r.errors;
    accepted += r.acceptedTargets;
    seconds += r.seconds;
  }
  return { accepted, statuses, targetsPerSecond: round(accepted / seconds) };
}

async function startWorkers(label: string): Promise<Workers> {
  // Info level: one "message applied" line per message, with its duration (express applies below).
  const start = (kinds: string) =>
    spawnTsx(
      'src/workers/runner.ts',
      { ...childEnv, LOG_LEVEL: 'info', WORKERS: kinds, WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0' },
      `${label} ${kinds}`,
    );
  const [bulk, express] = [start('inbound'), start('inbound-express')];
  await Promise.all([bulk.waitFor(/workers: running/), express.waitFor(/workers: running/)]);
  return {
    pids: [bulk.pid, express.pid],
    expressOutput: () => express.output(),
    stop: () => Promise.all([bulk.stop(), express.stop()]),
  };
}

/** Apply durations (ms) of express-lane messages, from the workers' "message applied" lines. */
function expressApplyMs(output: string): number[] {
  const out: number[] = [];
  for (const line of output.split('\n')) {
    if (!line.includes('"message applied"') || !line.includes('inbound.targets.express/')) continue;
    try {
      const ms = (JSON.parse(line) as { durationMs?: unknown }).durationMs;
      if (typeof ms === 'number') out.push(ms);
    } catch {
      // not a JSON line
    }
  }
  return out;
}

const pct = (values: number[]) => {
  const p = percentiles(values);
  const sorted = [...values].sort((a, b) => a - b);
  const p90 = sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(0.9 * sorted.length) - 1)]! : NaN;
  return { p50: round(p.p50), p90: round(p90), p99: round(p.p99), max: round(p.max) };
};

/** phaseCpu with the long-lived children counted from now. */
function cpuFrom(broker: number | null, pids: number[]) {
  const cpu = phaseCpu(broker, dbName);
  for (const pid of pids) cpu.track(pid);
  return { end: () => cpu.end(pids) };
}

/** B's figures, and where the time went: created → started is produce + fetch + the worker's queue. */
async function smallReport(samples: Small[], workerOutput: string) {
  const ids = samples.flatMap((s) => (s.importJobId ? [s.importJobId] : []));
  const { rows } = await pool!.query<{ wait_ms: number }>(
    `SELECT extract(epoch FROM started_at - created_at) * 1000 AS wait_ms FROM import_jobs WHERE id = ANY($1::bigint[]) AND started_at IS NOT NULL`,
    [ids],
  );
  const outcomes = samples.reduce<Record<string, number>>((m, s) => ((m[s.outcome] = (m[s.outcome] ?? 0) + 1), m), {});
  return {
    count: samples.length,
    outcomes,
    ms: pct(samples.map((s) => s.ms)),
    postMs: pct(samples.map((s) => s.postMs).filter(Number.isFinite)),
    createdToStartedMs: pct(rows.map((r) => Number(r.wait_ms))),
    expressApplyMs: pct(expressApplyMs(workerOutput)),
  };
}

async function run() {
  const loadAtStart = loadavg().map((n) => round(n, 2));
  log(
    `run ${runId}: ${opts.phaseSeconds} s per phase, backlog ${opts.backlogTargets} targets, share ${opts.shareTargets} each`,
  );
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });
  await ensureDatabase(databaseUrl);
  await migrateUp(databaseUrl);
  pool = createPool(databaseUrl, 2, 'bench-fairness');
  const make = async (name: string) => (await demo.run({ pool: pool!, warn: () => undefined }, { name })) as Tenant;
  const [a, b, c] = [await make('bulk-a'), await make('small-b'), await make('bulk-c')];
  // The operator's raise for the bulk tenants (admin CLI `client upload-quota`), and room for B's polling.
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
  await pool.query('UPDATE integration_clients SET upload_bytes_per_second = $1 WHERE tenant_id = ANY($2::uuid[])', [
    1024 ** 3,
    [a.tenantId, c.tenantId],
  ]);
  const broker = brokerPid(Number(brokers[0]!.split(':').at(-1)));
  const key = (t: Tenant) => t.clients.all!.apiKey;

  gateway = spawnTsx('src/gateway/server.ts', { ...childEnv, HOST: '127.0.0.1', PORT: '0' }, 'gateway', [
    ...benchGatewayNodeFlags(),
  ]);
  const base = (await gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  workers = await startWorkers('workers quiet');
  await smallImports(base, key(b), 'warm', 3); // JIT, connections, topics, the group's assignment

  // ---- quiet ------------------------------------------------------------------------------
  log('quiet: B alone');
  const quietCpu = cpuFrom(broker, [gateway.pid, ...workers.pids]);
  const quietSamples = await smallImports(base, key(b), 'quiet', opts.phaseSeconds);
  const quietCores = quietCpu.end();
  const quiet = await smallReport(quietSamples, workers.expressOutput());
  await workers.stop();

  // ---- backlog ----------------------------------------------------------------------------
  log(`backlog: workers stopped; A uploads ${opts.backlogTargets} targets`);
  const backlogMarker = await lastJobId();
  const upload = await pushBulk(base, key(a), 'a-', opts.backlogTargets, opts.bulkConcurrency);
  const queued = await progress(a.tenantId, backlogMarker);
  log(`backlog: ${queued.accepted} accepted (${upload.targetsPerSecond} targets/s); workers start`);
  workers = await startWorkers('workers backlog');
  const workersReadyAt = performance.now();
  while ((await progress(a.tenantId, backlogMarker)).applied === 0) await sleep(50);
  const windowStart = { at: performance.now(), applied: (await progress(a.tenantId, backlogMarker)).applied };
  const backlogCpu = cpuFrom(broker, [gateway.pid, ...workers.pids]);
  // B is timed while A has a backlog: the window ends early when less than a tenth of it is left.
  let nearlyDrained = false;
  const watch = (async () => {
    while (!nearlyDrained && workers) {
      nearlyDrained = queued.accepted - (await progress(a.tenantId, backlogMarker)).applied < queued.accepted / 10;
      await sleep(250);
    }
  })();
  const backlogSamples = await smallImports(base, key(b), 'backlog', opts.phaseSeconds, () => nearlyDrained);
  nearlyDrained = true;
  await watch;
  const backlogCores = backlogCpu.end();
  const windowEnd = { at: performance.now(), applied: (await progress(a.tenantId, backlogMarker)).applied };
  const backlog = await smallReport(backlogSamples, workers.expressOutput());
  let drained = await progress(a.tenantId, backlogMarker);
  while (drained.final < drained.jobs) {
    await sleep(200);
    drained = await progress(a.tenantId, backlogMarker);
  }
  const drainSeconds = (performance.now() - workersReadyAt) / 1000;
  const bulk = {
    accepted: queued.accepted,
    upload,
    appliedBeforeWindow: windowStart.applied,
    appliedInWindow: windowEnd.applied - windowStart.applied,
    leftAfterWindow: queued.accepted - windowEnd.applied,
    windowSeconds: round((windowEnd.at - windowStart.at) / 1000, 1),
    windowTargetsPerSecond: round(((windowEnd.applied - windowStart.applied) * 1000) / (windowEnd.at - windowStart.at)),
    drainSeconds: round(drainSeconds, 1),
    drainTargetsPerSecond: round(queued.accepted / drainSeconds),
  };
  log(`backlog: drained in ${bulk.drainSeconds} s`);
  await workers.stop();

  // ---- share ------------------------------------------------------------------------------
  log(`share: workers stopped; A and C upload ${opts.shareTargets} targets each at once`);
  const shareMarker = await lastJobId();
  const half = Math.max(1, Math.floor(opts.bulkConcurrency / 2));
  const [uploadA, uploadC] = await Promise.all([
    pushBulk(base, key(a), 'sa-', opts.shareTargets, half),
    pushBulk(base, key(c), 'sc-', opts.shareTargets, half),
  ]);
  workers = await startWorkers('workers share');
  const shareCpu = cpuFrom(broker, [gateway.pid, ...workers.pids]);
  const t0 = performance.now();
  const timeline: { s: number; a: number; c: number }[] = [];
  for (;;) {
    const [pa, pc] = [await progress(a.tenantId, shareMarker), await progress(c.tenantId, shareMarker)];
    timeline.push({ s: round((performance.now() - t0) / 1000, 1), a: pa.applied, c: pc.applied });
    if (pa.final === pa.jobs && pc.final === pc.jobs) break;
    await sleep(1000);
  }
  const shareCores = shareCpu.end();
  // Both had a backlog: from the last sample with nothing applied yet to the first one where either was done.
  const from = Math.max(0, timeline.findIndex((p) => p.a + p.c > 0) - 1);
  let to = timeline.findIndex((p) => p.a >= uploadA.accepted || p.c >= uploadC.accepted);
  if (to <= from) to = timeline.length - 1;
  const d = (k: 'a' | 'c') => timeline[to]![k] - timeline[from]![k];
  const share = {
    uploads: { a: uploadA, c: uploadC },
    bothBackloggedSeconds: round(timeline[to]!.s - timeline[from]!.s, 1),
    appliedWhileBoth: { a: d('a'), c: d('c') },
    ratioAOverC: round(d('a') / d('c'), 2),
    timeline,
  };

  const p99Ratio = round(backlog.ms.p99 / quiet.ms.p99, 2);
  const met = {
    p99Ratio: p99Ratio <= goals.p99Ratio,
    p99Ms: backlog.ms.p99 < goals.p99Ms,
    share: share.ratioAOverC >= goals.shareLow && share.ratioAOverC <= goals.shareHigh,
  };
  const cores = { quiet: quietCores, backlog: backlogCores, share: shareCores };
  const result = {
    benchmark: 'fairness',
    runAt: new Date().toISOString(),
    runId,
    machine: machineFacts(loadAtStart),
    options: opts,
    service: {
      workerApplyConcurrency: serviceConfig.workers.applyConcurrency,
      topicPartitions: serviceConfig.kafka.topicPartitions,
    },
    quiet,
    backlog,
    bulk,
    share,
    cores,
    goals: { ...goals, p99RatioMeasured: p99Ratio, met },
  };

  const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });
  const row = (label: string, q: string, bl: string, note: string) =>
    `${label.padEnd(32)} ${q.padStart(30)}  ${bl.padStart(30)}  ${note}`;
  const four = (p: ReturnType<typeof pct>) => `${p.p50} / ${p.p90} / ${p.p99} / ${p.max}`;
  const cpuNote = (x: PhaseCpu) =>
    `${x.busyCores} (bench ${x.benchCores}, broker ${x.brokerCores}, pg ${x.postgresCores}, other ${x.otherCores})`;
  const out = [
    '',
    `fairness (run ${runId}; ${opts.phaseSeconds} s per phase, B every ${opts.smallEveryMs} ms; backlog ${fmt(bulk.accepted)} targets; ` +
      `${machineCores()} cores, load ${loadAtStart.join(' ')})`,
    row('B small import, ms', 'quiet', `A's backlog draining`, ''),
    row('  POST → final p50/p90/p99/max', four(quiet.ms), four(backlog.ms), `p99 × ${p99Ratio}`),
    row('  POST p50/p90/p99/max', four(quiet.postMs), four(backlog.postMs), ''),
    row(
      '  created → apply started',
      four(quiet.createdToStartedMs),
      four(backlog.createdToStartedMs),
      'produce + fetch + worker queue',
    ),
    row('  express apply (worker log)', four(quiet.expressApplyMs), four(backlog.expressApplyMs), ''),
    row(
      '  imports / outcomes',
      `${quiet.count} ${JSON.stringify(quiet.outcomes)}`,
      `${backlog.count} ${JSON.stringify(backlog.outcomes)}`,
      '',
    ),
    row(
      '  cores busy',
      String(quietCores.busyCores),
      String(backlogCores.busyCores),
      `backlog: ${cpuNote(backlogCores)}`,
    ),
    `A upload: ${fmt(bulk.accepted)} targets accepted at ${fmt(upload.targetsPerSecond)} targets/s ${JSON.stringify(upload.statuses)} (workers stopped)`,
    `A applied: ${fmt(bulk.windowTargetsPerSecond)} targets/s in the ${bulk.windowSeconds} s B was timed (${fmt(bulk.appliedInWindow)} targets, ` +
      `${fmt(bulk.leftAfterWindow)} still queued after), ${fmt(bulk.drainTargetsPerSecond)} targets/s over the whole drain (${bulk.drainSeconds} s, from workers running)`,
    `share: A ${fmt(share.appliedWhileBoth.a)} / C ${fmt(share.appliedWhileBoth.c)} targets applied in the ${share.bothBackloggedSeconds} s both had a backlog: ` +
      `A/C = ${share.ratioAOverC} (uploads ${fmt(uploadA.accepted)} + ${fmt(uploadC.accepted)}; cores ${cpuNote(shareCores)})`,
    `goals: B p99 within ${goals.p99Ratio}× of quiet: ${met.p99Ratio ? 'met' : 'NOT met'} (${p99Ratio}×); ` +
      `under ${goals.p99Ms} ms: ${met.p99Ms ? 'met' : 'NOT met'} (${backlog.ms.p99} ms); ` +
      `share A/C ≈ 1 (${goals.shareLow}–${goals.shareHigh}): ${met.share ? 'met' : 'NOT met'} (${share.ratioAOverC})`,
    ...(bulk.windowSeconds < opts.phaseSeconds - 1
      ? [`note: B's window ended early, A's backlog nearly drained; raise BENCH_BACKLOG_TARGETS for a full phase`]
      : []),
    ...Object.entries(cores)
      .filter(([, x]) => x.otherCores > 0.3)
      .map(
        ([phase, x]) => `warning: other processes used ${x.otherCores} cores during ${phase}: figures are unreliable`,
      ),
    '',
  ];
  process.stdout.write(out.join('\n'));
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const json = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(join(dir, `fairness-${result.runAt.replace(/[:.]/g, '-')}.json`), json);
  writeFileSync(join(dir, 'fairness-latest.json'), json);
}

async function teardown() {
  await Promise.allSettled([workers?.stop(), gateway?.stop()]);
  await pool?.end().catch(() => undefined);
  await deleteRunArtifacts(brokers, topicPrefix).catch((err: Error) => log(`cleanup of topics failed: ${err.message}`));
  const maintenance = new URL(serverUrl);
  maintenance.pathname = '/postgres';
  const admin = createPool(maintenance.toString(), 1, 'bench-fairness-cleanup');
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
  await admin.end();
}

await runBench(run, teardown);
