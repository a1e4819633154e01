// `npx tsx bench/inbound.ts`: inbound target throughput, each figure against a bare baseline
// measured in the same run on the same machine. Brings up what it needs (the local broker via
// scripts/kafka up, a throwaway database, a demo tenant), runs every party as its own process,
// prints a table and writes the figures to bench/results/inbound-<time>.json and
// bench/results/inbound-latest.json. Asserts nothing. Phases, in this order:
//
//   A0  bare producer (bench/lib/bare-producer.ts): the service's Kafka adapter (kafkajs,
//       idempotent, acks=-1, one request in flight) sends the same batches, cut and enveloped as
//       the gateway does, into the same topic with the same concurrency: the path's physical limit.
//       Repeated BENCH_A0_ROUNDS times with the same messages; the median round counts. The
//       workers' consumer group is then moved past these messages (they name no import job).
//   A   the gateway process under load from bench/lib/load.ts (another process, loopback,
//       keep-alive, N concurrent clients, bounded in count and time): targets accepted per
//       second in 200 answers, request latency, the gateway's peak memory (VmHWM). No workers run.
//       CPU (every process's, and the machine's) is counted from the end of the warm-up batches,
//       as A0's is: the gateway starts its parse and producer threads on first use.
//   B   the worker runner process (WORKERS=inbound) applies everything A queued: targets per
//       second from the first chunk's transaction (min import_jobs.started_at) until every job of
//       the run is Completed (seen by polling every 50 ms).
//   U   the load of A again under new batch ids (the same targets: every one an update), then a
//       new worker runner applies them, timed as B; with B's chunks, printed by how the worker
//       applied them (copied straight into targets, or upserted: worker_inbound_chunks_total).
//   B0  psql `\copy` of the same rows (same columns the worker writes) into the same `targets`
//       table under another tenant: same indexes, TOAST and WAL as the worker pays
//       (a TEMP table would skip WAL and flatter the baseline). BENCH_B0_ROUNDS rounds, one new
//       tenant each; the median round counts.
//   P   backpressure probe: more concurrent batches than INBOUND_MAX_IN_FLIGHT; counts 200 vs
//       503 + Retry-After and the gateway's peak memory meanwhile.
//
// Options (env): BENCH_BATCHES (400: with 200 the workers' phase lasted 3 s and its ratio varied
// by a third between runs), BENCH_BATCH_SIZE (1000), BENCH_CONCURRENCY (4), BENCH_WARMUP_BATCHES
// (2 × concurrency), BENCH_MAX_SECONDS (60, per load phase),
// BENCH_A0_ROUNDS (3) and BENCH_B0_ROUNDS (3) (baselines repeated, median taken), BENCH_UPDATES (1; 0 skips U),
// BENCH_PROBE (1; 0 skips P), BENCH_PROBE_CONCURRENCY (64), BENCH_PROBE_REQUESTS (4 × that),
// BENCH_CPU_PROF (a directory: the gateway and the workers write V8 CPU profiles there),
// BENCH_GATEWAY_NODE_FLAGS (the gateway's Node options instead of src/gateway/node-flags.ts's;
// "none" for none), BENCH_LOG_DIR (a directory: each child's output is also written there),
// DATABASE_URL (server to create the throwaway database on), KAFKA_BROKERS (127.0.0.1:9092).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { topicNames } from '../src/shared/kafka/topics.js';
import type { ProducerParams, ProducerResult } from './lib/bare-producer.js';
import { deleteRunArtifacts, moveGroupToEnd, topicMessageCount } from './lib/kafka-admin.js';
import type { LoadParams, LoadResult } from './lib/load.js';
import {
  brokerPid,
  cpuSeconds,
  threadCpuSeconds,
  machineCores,
  runBench,
  phaseCpu,
  readMemory,
  resetPeak,
  resultOf,
  runForResult,
  sampleMemory,
  benchGatewayNodeFlags,
  spawnTsx,
  type Child,
  type PhaseCpu,
} from './lib/processes.js';
import { round } from './lib/stats.js';
import { applyPhase, chunkMix, type ApplyPhase } from './lib/apply-phase.js';
import { envInt } from './lib/env.js';
import { benchDatabase } from './lib/bench-database.js';
import { capacityEnv } from './lib/service-env.js';

/** The gateway's threads the table names; the rest (V8's, libuv's) count as other. */
const gatewayThreadNames = ['event loop', 'batch-parse', 'kafka-producer', 'other'];

/** CPU seconds each named thread used between two readings, the unnamed ones summed as other. */
function threadDelta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, seconds] of after) {
    const key = gatewayThreadNames.includes(name) ? name : 'other';
    out[key] = (out[key] ?? 0) + seconds - (before.get(name) ?? 0);
  }
  return out;
}

const opts = {
  batches: envInt('BENCH_BATCHES', 400),
  batchSize: envInt('BENCH_BATCH_SIZE', 1000),
  concurrency: envInt('BENCH_CONCURRENCY', 4),
  warmupBatches: 0,
  maxSeconds: envInt('BENCH_MAX_SECONDS', 60),
  probe: envInt('BENCH_PROBE', 1, 0) > 0,
  probeConcurrency: envInt('BENCH_PROBE_CONCURRENCY', 64),
  probeRequests: 0,
  a0Rounds: envInt('BENCH_A0_ROUNDS', 3),
  b0Rounds: envInt('BENCH_B0_ROUNDS', 3),
  updates: envInt('BENCH_UPDATES', 1, 0) > 0,
};
opts.warmupBatches = envInt('BENCH_WARMUP_BATCHES', 2 * opts.concurrency, 0);
opts.probeRequests = envInt('BENCH_PROBE_REQUESTS', 4 * opts.probeConcurrency);

const repoRoot = new URL('..', import.meta.url).pathname;
const runId = randomBytes(4).toString('hex');
const db = benchDatabase(`connect_bench_inbound_${runId}`);
const dbName = db.name;
const databaseUrl = db.url;
const topicPrefix = `bench-inbound-${runId}.`;
const childEnv = capacityEnv(databaseUrl, topicPrefix);
const serviceConfig = loadConfig(childEnv);
const brokers = serviceConfig.kafka.brokers;
const topic = topicNames(serviceConfig.kafka).inboundTargets;
const csvPath = join(tmpdir(), `bench-inbound-${runId}.csv`);
const cpuProfDir = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : '';
const profArgs = cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [];
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The columns the inbound worker writes (src/workers/inbound/sql.ts, upsertTargets).
const targetColumns = [
  'tenant_id',
  'source_system',
  'external_id',
  'name',
  'address',
  'latitude',
  'longitude',
  'time_windows',
  'service_duration_minutes',
  'priority',
  'tags',
  'metadata',
  'last_import_job_id',
  'last_item_index',
];

function psql(commands: string[]): string {
  const args = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', databaseUrl, ...commands.flatMap((c) => ['-c', c])];
  const r = spawnSync('psql', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/**
 * psql run asynchronously while this process samples the CPU time of psql's backend (found by
 * application name in pg_stat_activity), so the COPY's server-side CPU counts as the benchmark's.
 */
async function psqlWatched(pool: pg.Pool, commands: string[]): Promise<{ stdout: string; backendCpuSeconds: number }> {
  const appName = `bench-inbound-copy-${runId}`;
  const args = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', databaseUrl, ...commands.flatMap((c) => ['-c', c])];
  const child = spawn('psql', args, { env: { ...process.env, PGAPPNAME: appName }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));
  let backend: number | null = null;
  let backendCpu = 0;
  while (running) {
    if (backend === null) {
      const { rows } = await pool.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
        [appName],
      );
      backend = rows[0]?.pid ?? null;
    }
    if (backend !== null) {
      const cpu = cpuSeconds(backend);
      if (Number.isFinite(cpu)) backendCpu = cpu;
    }
    await sleep(20);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`psql failed (${code}): ${stderr}`);
  return { stdout, backendCpuSeconds: backendCpu };
}

async function checkpoint(pool: pg.Pool) {
  await pool.query('CHECKPOINT').catch((err: Error) => log(`CHECKPOINT not allowed (${err.message}); continuing`));
}

type Tenant = { tenantId: string; clients: Record<string, { apiKey: string; clientId: string }> };

let gateway: Child | null = null;
let workers: Child | null = null;
let pool: pg.Pool | null = null;

const loadAtStart = loadavg().map((n) => round(n, 2));

async function run() {
  log(`run ${runId}: ${opts.batches} batches × ${opts.batchSize} targets, ${opts.concurrency} concurrent clients`);
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });

  await ensureDatabase(databaseUrl);
  await migrateUp(databaseUrl);
  pool = createPool(databaseUrl, 4, 'bench-inbound');
  const tenant = (await demo.run({ pool, warn: () => undefined }, { name: 'bench-inbound' })) as Tenant;
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
  const broker = brokerPid(Number(brokers[0]!.split(':').at(-1)));
  const client = tenant.clients['inbound.targets.batch.write'] ?? tenant.clients.all!;
  const phaseTimeoutMs = (opts.maxSeconds * 3 + 120) * 1000;

  // ---- A0: the bare producer -------------------------------------------------------------
  log('A0: bare producer');
  const producerParams: ProducerParams = {
    runId,
    tag: 'a0-',
    batches: opts.batches,
    warmupBatches: opts.warmupBatches,
    batchSize: opts.batchSize,
    concurrency: opts.concurrency,
    tenantId: tenant.tenantId,
    clientId: client.clientId,
    maxSeconds: opts.maxSeconds,
    rounds: opts.a0Rounds,
  };
  const cpuA0 = phaseCpu(broker, dbName);
  const a0 = await runForResult<ProducerResult>(
    'bench/lib/bare-producer.ts',
    { ...childEnv, BENCH_PRODUCER_PARAMS: JSON.stringify(producerParams) },
    'bare producer',
    phaseTimeoutMs,
  );
  const a0Cpu = cpuA0.end([]);
  const skipped = await moveGroupToEnd(brokers, `${topicPrefix}inbound`, topic);
  log(`A0: ${a0.targetsPerSecond} targets/s; workers' group moved past ${skipped} messages`);

  // ---- A: the gateway under load ---------------------------------------------------------
  gateway = spawnTsx('src/gateway/server.ts', { ...childEnv, HOST: '127.0.0.1', PORT: '0' }, 'gateway', [
    ...benchGatewayNodeFlags(),
    ...profArgs,
  ]);
  const url = (await gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  const idle = readMemory(gateway.pid);
  const peakReset = resetPeak(gateway.pid);
  const memA = sampleMemory(gateway.pid);
  log(`A: gateway at ${url} (pid ${gateway.pid}, idle RSS ${idle?.rssMiB.toFixed(0)} MiB)`);
  const loadParams: LoadParams = {
    url,
    apiKey: client.apiKey,
    runId,
    mode: 'throughput',
    tag: 'a-',
    batches: opts.batches,
    warmupBatches: opts.warmupBatches,
    holdAfterWarmup: true,
    batchSize: opts.batchSize,
    concurrency: opts.concurrency,
    maxSeconds: opts.maxSeconds,
    timeoutMs: 60_000,
  };
  const loadChild = spawnTsx(
    'bench/lib/load.ts',
    { ...childEnv, BENCH_LOAD_PARAMS: JSON.stringify(loadParams) },
    'load generator',
    [],
    { stdin: true },
  );
  // CPU is counted from the end of the warm-up, as A0's is: starting the parse and producer
  // threads and compiling the hot code are paid once per process, not per target.
  await loadChild.waitFor(/load: warm/, phaseTimeoutMs);
  const gatewayCpu0 = cpuSeconds(gateway.pid);
  const gatewayThreads0 = threadCpuSeconds(gateway.pid);
  const loadCpuBeforeGo = cpuSeconds(loadChild.pid);
  const cpuA = phaseCpu(broker, dbName);
  cpuA.track(gateway.pid);
  loadChild.child.stdin!.end('go\n');
  const a = await resultOf<LoadResult>(loadChild, 'load generator', phaseTimeoutMs);
  // The load generator's CPU before the go (building bodies, warm-up) is not the phase's.
  const aCpu = cpuA.end([gateway.pid], { benchSeconds: -loadCpuBeforeGo });
  const gatewayCpuA = cpuSeconds(gateway.pid) - gatewayCpu0;
  const gatewayThreadsA = threadDelta(gatewayThreads0, threadCpuSeconds(gateway.pid));
  const aMem = memA.stop();
  log(
    `A: ${a.targetsPerSecond} targets/s, statuses ${JSON.stringify(a.statuses)}, peak RSS ${aMem.peakHwmMiB.toFixed(0)} MiB`,
  );

  const queued = (
    await pool.query<{ jobs: number; targets: number; messages: number }>(
      `SELECT count(*)::int AS jobs, coalesce(sum(accepted_count), 0)::int AS targets,
              coalesce(sum(chunk_count), 0)::int AS messages
         FROM import_jobs WHERE tenant_id = $1`,
      [tenant.tenantId],
    )
  ).rows[0]!;
  const topicMessages = await topicMessageCount(brokers, topic);

  // ---- B: the workers apply what A queued -------------------------------------------------
  const applyParams = {
    pool,
    broker,
    dbName,
    env: childEnv,
    applyConcurrency: serviceConfig.workers.applyConcurrency,
    tenantId: tenant.tenantId,
    timeoutMs: phaseTimeoutMs,
    nodeArgs: profArgs,
    onRunner: (runner: Child | null) => (workers = runner),
  };
  log(`B: workers apply ${queued.targets} targets of ${queued.jobs} import jobs`);
  const b = await applyPhase({ ...applyParams, phase: 'B', afterJobId: 0, jobs: queued.jobs });
  log(`B: ${b.targetsPerSecond} targets/s over ${b.seconds} s`);

  // ---- U: the same targets again under new batch ids: every one an update -----------------
  let u: ApplyPhase | null = null;
  if (opts.updates) {
    const lastJob = Number((await pool.query('SELECT max(id) AS id FROM import_jobs')).rows[0].id);
    const again = await runForResult<LoadResult>(
      'bench/lib/load.ts',
      {
        ...childEnv,
        BENCH_LOAD_PARAMS: JSON.stringify({
          ...loadParams,
          holdAfterWarmup: false,
          batchIdSuffix: '-again',
        } satisfies LoadParams),
      },
      'load generator (updates)',
      phaseTimeoutMs,
    );
    const jobs = Number(
      (
        await pool.query('SELECT count(*) AS n FROM import_jobs WHERE tenant_id = $1 AND id > $2', [
          tenant.tenantId,
          lastJob,
        ])
      ).rows[0].n,
    );
    log(`U: workers apply ${again.acceptedTargets} targets again (updates) in ${jobs} import jobs`);
    u = await applyPhase({ ...applyParams, phase: 'U', afterJobId: lastJob, jobs });
    log(`U: ${u.targetsPerSecond} targets/s over ${u.seconds} s`);
  }

  // ---- B0: a bare COPY of the same rows ---------------------------------------------------
  // The same rows (exported from what B wrote) under another tenant each round (the primary key
  // includes tenant_id); the median round is the figure. Timed: the \copy statement (psql \timing).
  const copyRounds: {
    rows: number;
    seconds: number;
    rowsPerSecond: number;
    psqlProcessSeconds: number;
    cpu: PhaseCpu;
  }[] = [];
  for (let r = 0; r < opts.b0Rounds; r++) {
    const copyTenant = (await demo.run({ pool, warn: () => undefined }, { name: `bench-inbound-copy-${r}` })) as Tenant;
    const select = targetColumns.map((c) => (c === 'tenant_id' ? `'${copyTenant.tenantId}'::uuid` : c)).join(', ');
    psql([
      `\\copy (SELECT ${select} FROM targets WHERE tenant_id = '${tenant.tenantId}') TO '${csvPath}' WITH (FORMAT csv)`,
    ]);
    await checkpoint(pool);
    const cpuB0 = phaseCpu(broker, dbName);
    const copyStarted = performance.now();
    const { stdout: out, backendCpuSeconds } = await psqlWatched(pool, [
      '\\timing on',
      `\\copy targets (${targetColumns.join(', ')}) FROM '${csvPath}' WITH (FORMAT csv)`,
    ]);
    const copyWallMs = performance.now() - copyStarted;
    const cpu = cpuB0.end([], { benchSeconds: backendCpuSeconds });
    rmSync(csvPath, { force: true });
    const statementMs = Number(out.match(/Time: ([\d.]+) ms/)?.[1] ?? NaN);
    const rows = (
      await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM targets WHERE tenant_id = $1', [
        copyTenant.tenantId,
      ])
    ).rows[0]!.n;
    copyRounds.push({
      rows,
      seconds: round(statementMs / 1000, 3),
      rowsPerSecond: round(rows / (statementMs / 1000)),
      psqlProcessSeconds: round(copyWallMs / 1000, 3),
      cpu,
    });
  }
  const b0 = {
    ...[...copyRounds].sort((x, y) => x.rowsPerSecond - y.rowsPerSecond)[Math.floor(copyRounds.length / 2)]!,
    rounds: copyRounds.map((x) => x.rowsPerSecond),
    target: 'targets (same table, one more tenant per round)',
  };
  log(`B0: ${b0.rowsPerSecond} rows/s`);

  // ---- P: backpressure probe --------------------------------------------------------------
  let probe: Record<string, unknown> | null = null;
  if (opts.probe) {
    log(
      `P: ${opts.probeRequests} batches, ${opts.probeConcurrency} concurrent (in-flight limit ${serviceConfig.inbound.maxInFlight})`,
    );
    const before = readMemory(gateway.pid);
    const reset = resetPeak(gateway.pid);
    const memP = sampleMemory(gateway.pid);
    const p = await runForResult<LoadResult>(
      'bench/lib/load.ts',
      {
        ...childEnv,
        BENCH_LOAD_PARAMS: JSON.stringify({
          ...loadParams,
          mode: 'probe',
          tag: 'p-',
          batches: opts.probeRequests,
          warmupBatches: 0,
          holdAfterWarmup: false,
          concurrency: opts.probeConcurrency,
        } satisfies LoadParams),
      },
      'probe load generator',
      phaseTimeoutMs,
    );
    const pMem = memP.stop();
    probe = {
      concurrency: opts.probeConcurrency,
      inFlightLimit: serviceConfig.inbound.maxInFlight,
      requests: p.requests,
      statuses: p.statuses,
      retryAfter: p.retryAfter,
      retryAfterValues: p.retryAfterValues,
      errors: p.errors,
      errorSamples: p.errorSamples,
      acceptedTargetsPerSecond: p.targetsPerSecond,
      latencyOkMs: p.latencyMs,
      latencyAllMs: p.latencyAllMs,
      rssBeforeMiB: round(before?.rssMiB ?? NaN, 0),
      peakRssMiB: round(reset ? pMem.peakHwmMiB : pMem.maxSampledRssMiB, 0),
      peakFrom: reset ? 'VmHWM (reset before the probe)' : 'largest 50 ms sample of VmRSS',
    };
    log(`P: statuses ${JSON.stringify(p.statuses)}, Retry-After on ${p.retryAfter}, peak RSS ${probe.peakRssMiB} MiB`);
  }

  // ---- Report ----------------------------------------------------------------------------
  const aOverA0 = a.targetsPerSecond / a0.targetsPerSecond;
  // Issue 42's aims for the gateway (A/A0, its CPU per 1,000 targets); issue 14's for the workers.
  const aims = { aOverA0: 0.75, bOverB0: 0.8, gatewayCpuMsPer1000: 10 };
  /** CPU ms per 1,000 targets of a phase: cores × wall seconds over thousands of targets. */
  const per1000 = (cores: number, wallSeconds: number, targets: number) =>
    round((cores * wallSeconds * 1e6) / targets, 1);
  const aTargets = a.acceptedTargets; // measured after the warm-up, as the gateway's CPU is
  const applyCpuPer1000 = (x: ApplyPhase) => ({
    worker: round((x.workerCpuSeconds * 1e6) / x.targets, 1),
    broker: per1000(x.cpu.brokerCores, x.cpu.wallSeconds, x.targets),
    postgres: per1000(x.cpu.postgresCores, x.cpu.wallSeconds, x.targets),
  });
  const cpuPer1000 = {
    A0: {
      producer: round((a0.cpuSeconds * 1e6) / a0.targets, 1),
      broker: per1000(a0Cpu.brokerCores, a0Cpu.wallSeconds, a0.targets * a0.rounds.length),
    },
    A: {
      gateway: round((gatewayCpuA * 1e6) / aTargets, 1),
      gatewayThreads: Object.fromEntries(
        Object.entries(gatewayThreadsA).map(([name, seconds]) => [name, round((seconds * 1e6) / aTargets, 1)]),
      ),
      broker: per1000(aCpu.brokerCores, aCpu.wallSeconds, aTargets),
      postgres: per1000(aCpu.postgresCores, aCpu.wallSeconds, aTargets),
    },
    B: applyCpuPer1000(b),
    U: u && applyCpuPer1000(u),
    machineBusyCores: { A0: a0Cpu.busyCores, A: aCpu.busyCores, B: b.cpu.busyCores, U: u?.cpu.busyCores ?? null },
  };
  // A is CPU-bound on a small machine: at A's CPU per target (the gateway, the broker, PostgreSQL
  // and the load generator; not other users of the machine), every core would carry `ceiling`
  // targets/s. So A/A0 cannot pass ceiling/A0, and A/A0 = aim needs the gateway's CPU per 1,000
  // targets at most `gatewayForAim` (the rest of A's CPU per target as measured).
  const aOwnCores = aCpu.busyCores - aCpu.otherCores;
  const aCeiling = (a.targetsPerSecond * machineCores()) / aOwnCores;
  const aRestPer1000 = (aOwnCores * 1e6) / a.targetsPerSecond - cpuPer1000.A.gateway;
  const gatewayForAim = (machineCores() * 1e6) / (aims.aOverA0 * a0.targetsPerSecond) - aRestPer1000;
  const bOverB0 = b.targetsPerSecond / b0.rowsPerSecond;
  const result = {
    benchmark: 'inbound',
    runAt: new Date().toISOString(),
    runId,
    machine: { cpus: machineCores(), node: process.version, loadAverageAtStart: loadAtStart },
    options: opts,
    kafka: {
      brokers,
      brokerPid: broker,
      topic,
      partitions: serviceConfig.kafka.topicPartitions,
      chunkMaxBytes: serviceConfig.inbound.chunkMaxBytes,
    },
    a0: {
      ...a0,
      cpu: a0Cpu,
    },
    a: {
      targetsPerSecond: a.targetsPerSecond,
      requestsPerSecond: a.requestsPerSecond,
      seconds: a.seconds,
      requests: a.requests,
      statuses: a.statuses,
      errors: a.errors,
      errorSamples: a.errorSamples,
      acceptedTargets: a.acceptedTargets,
      bodyBytesAvg: a.bodyBytesAvg,
      latencyMs: a.latencyMs,
      warmup: a.warmup,
      queuedJobs: queued.jobs,
      queuedMessages: queued.messages,
      topicMessages,
      gateway: {
        idleRssMiB: round(idle?.rssMiB ?? NaN, 0),
        peakRssMiB: round(peakReset ? aMem.peakHwmMiB : aMem.maxSampledRssMiB, 0),
        peakFrom: peakReset ? 'VmHWM (reset after start-up, before the load)' : 'VmHWM since start-up',
        maxSampledRssMiB: round(aMem.maxSampledRssMiB, 0),
        cpuSeconds: round(gatewayCpuA, 2),
        cpuCoresUsed: round(gatewayCpuA / a.seconds, 2),
      },
      loadGeneratorCpuSeconds: a.cpuSeconds,
      cpu: aCpu,
    },
    b,
    u,
    b0,
    probe,
    /** CPU used by processes outside this benchmark, broker and PostgreSQL, per phase (cores). */
    otherCpuCores: {
      A0: a0Cpu.otherCores,
      A: aCpu.otherCores,
      B: b.cpu.otherCores,
      ...(u ? { U: u.cpu.otherCores } : {}),
      B0: b0.cpu.otherCores,
    },
    aCpuBound: {
      ceilingTargetsPerSecond: round(aCeiling, 0),
      ceilingOverA0: round(aCeiling / a0.targetsPerSecond, 3),
      restOfACpuPer1000: round(aRestPer1000, 1),
      gatewayCpuPer1000ForAim: round(gatewayForAim, 1),
    },
    ratios: {
      aOverA0: round(aOverA0, 3),
      bOverB0: round(bOverB0, 3),
      uOverB0: u && round(u.targetsPerSecond / b0.rowsPerSecond, 3),
    },
    aims: {
      aOverA0: aims.aOverA0,
      bOverB0: aims.bOverB0,
      aMet: aOverA0 >= aims.aOverA0,
      bMet: bOverB0 >= aims.bOverB0,
    },
    cpuMsPer1000Targets: cpuPer1000,
  };

  const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const rows: [string, string, string, string][] = [
    [
      'A0 bare producer (kafkajs, acks=-1)',
      fmt(a0.targetsPerSecond),
      'targets/s',
      `${fmt(a0.megabytesPerSecond, 1)} MB/s, median of ${a0.rounds.length}`,
    ],
    [
      'A  POST targets/batch, accepted',
      fmt(a.targetsPerSecond),
      'targets/s',
      `A/A0 = ${aOverA0.toFixed(2)}${aOverA0 >= aims.aOverA0 ? '' : `  (aim ${aims.aOverA0.toFixed(2)})`}`,
    ],
    [
      'A  CPU per 1,000 targets',
      `${fmt(cpuPer1000.A.gateway, 1)} / ${fmt(cpuPer1000.A.broker, 1)} / ${fmt(cpuPer1000.A.postgres, 1)}`,
      'ms',
      `gateway / broker / PostgreSQL${cpuPer1000.A.gateway <= aims.gatewayCpuMsPer1000 ? '' : `  (gateway aim ${aims.gatewayCpuMsPer1000})`}; A0 producer ${fmt(cpuPer1000.A0.producer, 1)}`,
    ],
    [
      'A  ceiling if CPU-bound',
      fmt(aCeiling),
      'targets/s',
      `A/A0 <= ${(aCeiling / a0.targetsPerSecond).toFixed(2)} at this CPU per target; A/A0 = ${aims.aOverA0} needs the gateway <= ${fmt(gatewayForAim, 1)} ms per 1,000 (rest of A ${fmt(aRestPer1000, 1)})`,
    ],
    [
      'A  gateway CPU by thread',
      gatewayThreadNames.map((n) => fmt(cpuPer1000.A.gatewayThreads[n] ?? 0, 1)).join(' / '),
      'ms',
      `${gatewayThreadNames.join(' / ')} (per 1,000 targets)`,
    ],
    [
      'A  request latency p50/p95/p99',
      `${fmt(a.latencyMs.p50)} / ${fmt(a.latencyMs.p95)} / ${fmt(a.latencyMs.p99)}`,
      'ms',
      `${opts.batchSize} targets/request`,
    ],
    [
      'A  gateway peak memory (VmHWM)',
      fmt(result.a.gateway.peakRssMiB),
      'MiB',
      `idle ${fmt(result.a.gateway.idleRssMiB)} MiB`,
    ],
    ['B0 COPY same rows into targets', fmt(b0.rowsPerSecond), 'rows/s', `median of ${b0.rounds.length}`],
    [
      'B  workers applied',
      fmt(b.targetsPerSecond),
      'targets/s',
      `B/B0 = ${bOverB0.toFixed(2)}${bOverB0 >= aims.bOverB0 ? '' : `  (aim ${aims.bOverB0.toFixed(2)})`}`,
    ],
    [
      'B  CPU per 1,000 targets',
      `${fmt(cpuPer1000.B.worker, 1)} / ${fmt(cpuPer1000.B.broker, 1)} / ${fmt(cpuPer1000.B.postgres, 1)}`,
      'ms',
      'worker / broker / PostgreSQL',
    ],
    [
      'B  chunk apply p50/p95/p99',
      `${fmt(b.applyMs.p50, 1)} / ${fmt(b.applyMs.p95, 1)} / ${fmt(b.applyMs.p99, 1)}`,
      'ms',
      `${fmt(b.applyMs.chunks)} chunks (${chunkMix(b.chunks)}); applies filled ${fmt(b.applyMs.slotsBusy, 2)} of ${b.applyMs.slots} partition slots`,
    ],
    [
      'B  worker peak memory (VmHWM)',
      fmt(b.workerRssMiB),
      'MiB',
      b.workerPeakFrom.includes('reset') ? 'from when it ran' : 'since its start',
    ],
    ...(u
      ? ([
          [
            'U  workers applied the same again',
            fmt(u.targetsPerSecond),
            'targets/s',
            `U/B0 = ${(u.targetsPerSecond / b0.rowsPerSecond).toFixed(2)}; every target an update; ${chunkMix(u.chunks)}`,
          ],
          [
            'U  CPU per 1,000 targets',
            `${fmt(cpuPer1000.U!.worker, 1)} / ${fmt(cpuPer1000.U!.broker, 1)} / ${fmt(cpuPer1000.U!.postgres, 1)}`,
            'ms',
            'worker / broker / PostgreSQL',
          ],
        ] satisfies [string, string, string, string][])
      : []),
    [
      `machine busy during A0 / A / B${u ? ' / U' : ''}`,
      [a0Cpu, aCpu, b.cpu, ...(u ? [u.cpu] : [])].map((c) => fmt(c.busyCores, 2)).join(' / '),
      'cores',
      `of ${machineCores()}; load average at start ${loadAtStart.join(' ')}`,
    ],
  ];
  // Every service process's peak in one row (issue 31: the manifests' memory sizes come from these).
  rows.push([
    'peak RSS of every service process',
    [result.a.gateway.peakRssMiB, probe?.peakRssMiB ?? NaN, b.workerRssMiB, u?.workerRssMiB ?? NaN]
      .map((m) => fmt(m as number))
      .join(' / '),
    'MiB',
    'gateway A / gateway P / workers B / workers U (NaN: phase skipped)',
  ]);
  if (probe) {
    const st = probe.statuses as Record<string, number>;
    rows.push([
      `P  ${opts.probeConcurrency} concurrent > limit ${serviceConfig.inbound.maxInFlight}`,
      `${st['200'] ?? 0} × 200, ${st['503'] ?? 0} × 503`,
      'answers',
      `Retry-After on ${probe.retryAfter}; peak ${fmt(probe.peakRssMiB as number)} MiB`,
    ]);
  }
  const widths = [0, 1, 2, 3].map((i) =>
    Math.max(...[['phase', 'figure', 'unit', 'ratio / note'], ...rows].map((r) => r[i]!.length)),
  );
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  console.log(
    `\nInbound targets, ${opts.batches} batches × ${opts.batchSize} targets, ${opts.concurrency} concurrent clients, ` +
      `${machineCores()} cores (run ${runId})\n`,
  );
  console.log(line(['phase', 'figure', 'unit', 'ratio / note']));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(r));
  console.log(
    `\nB timed from the first chunk's transaction to the last job Completed (${b.seconds} s); ` +
      `from worker process start: ${fmt(b.fromProcessStart.targetsPerSecond)} targets/s.`,
  );

  const contended = Object.entries(result.otherCpuCores).filter(([, cores]) => cores > 0.3);
  if (contended.length > 0)
    console.log(
      `\nwarning: other processes used ${contended.map(([phase, cores]) => `${cores} cores during ${phase}`).join(', ')} ` +
        `of ${machineCores()}: figures are unreliable; rerun on a quiet machine.`,
    );

  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `inbound-${result.runAt.replace(/[:.]/g, '-')}.json`);
  const json = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(file, json);
  writeFileSync(join(dir, 'inbound-latest.json'), json);
  console.log(`results: ${file.slice(repoRoot.length)} (and bench/results/inbound-latest.json)`);
}

async function teardown() {
  await Promise.allSettled([workers?.stop(), gateway?.stop()]);
  await pool?.end().catch(() => undefined);
  rmSync(csvPath, { force: true });
  await deleteRunArtifacts(brokers, topicPrefix).catch((err: Error) => log(`could not delete topics: ${err.message}`));
  await db.drop(log);
}

await runBench(run, teardown);
