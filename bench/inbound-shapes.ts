// `npm run bench:inbound-shapes`: how the gateway's CPU per
// target grows with the shape of the load, so a regression in any shape shows: CPU per 1,000
// targets (and per request, by thread) for batches of 1, 100, 1,000 and 10,000 targets at 4
// concurrent clients, and for 1, 4 and 16 concurrent clients at 1,000; then the per-request
// overhead of a one-target push (POST /api/v1/inbound/targets) against the bare baseline of the
// same run, GET /livez on the same gateway (no auth, no body, no PostgreSQL, no Kafka). One
// gateway process (no workers: the chunks stay in the run's topics, deleted at the end), loaded by
// bench/lib/load.ts in another process; CPU from /proc, counted after each shape's warm-up.
// Asserts nothing; writes bench/results/inbound-shapes-<time>.json.
//
// Options (env): BENCH_TARGETS (targets per batch shape: 100000), BENCH_REQUESTS (requests of the
// per-request lines: 2000), BENCH_MAX_SECONDS (60 per shape), BENCH_SHAPES (which shapes, by
// their 1-based place in the table, e.g. "7,8"; default all), BENCH_CPU_PROF (a directory: the
// gateway writes V8 CPU profiles there), DATABASE_URL, KAFKA_BROKERS.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { benchDatabase } from './lib/bench-database.js';
import { envInt } from './lib/env.js';
import { capacityEnv } from './lib/service-env.js';
import { deleteRunArtifacts } from './lib/kafka-admin.js';
import type { LoadParams, LoadResult } from './lib/load.js';
import {
  benchGatewayNodeFlags,
  cpuSeconds,
  machineCores,
  resultOf,
  runBench,
  spawnTsx,
  threadCpuSeconds,
  type Child,
} from './lib/processes.js';
import { round } from './lib/stats.js';

const targetsPerShape = envInt('BENCH_TARGETS', 100_000);
const requestsPerLine = envInt('BENCH_REQUESTS', 2000);
const maxSeconds = envInt('BENCH_MAX_SECONDS', 60);

const repoRoot = new URL('..', import.meta.url).pathname;
const runId = randomBytes(4).toString('hex');
const db = benchDatabase(`connect_bench_shapes_${runId}`);
const databaseUrl = db.url;
const topicPrefix = `bench-shapes-${runId}.`;
const childEnv: NodeJS.ProcessEnv = {
  ...capacityEnv(db.url, topicPrefix),
  // One client may use every in-flight slot: 16 concurrent clients are 16 requests at once.
  IN_FLIGHT_CLIENT_SHARE_PERCENT: '100',
  IN_FLIGHT_TENANT_SHARE_PERCENT: '100',
  INBOUND_MAX_IN_FLIGHT: '32',
};
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

type Shape = {
  label: string;
  endpoint: NonNullable<LoadParams['endpoint']>;
  batchSize: number;
  concurrency: number;
  requests: number;
};

const batchShape = (batchSize: number, concurrency: number): Shape => ({
  label: `batch of ${batchSize.toLocaleString('en-US')}, ${concurrency} client${concurrency > 1 ? 's' : ''}`,
  endpoint: 'batch',
  batchSize,
  concurrency,
  requests: Math.max(20, Math.min(requestsPerLine, Math.ceil(targetsPerShape / batchSize))),
});
const allShapes: Shape[] = [
  batchShape(1, 4),
  batchShape(100, 4),
  batchShape(1000, 4),
  batchShape(10_000, 4),
  batchShape(1000, 1),
  batchShape(1000, 16),
  { label: 'one-target push, 4 clients', endpoint: 'single', batchSize: 1, concurrency: 4, requests: requestsPerLine },
  { label: 'GET /livez (bare), 4 clients', endpoint: 'livez', batchSize: 1, concurrency: 4, requests: requestsPerLine },
];

const only = (process.env.BENCH_SHAPES ?? '').split(',').filter(Boolean).map(Number);
const shapes = only.length ? allShapes.filter((_, i) => only.includes(i + 1)) : allShapes;
const cpuProfDir = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : '';

const threadNames = ['event loop', 'batch-parse', 'kafka-producer'];
let gateway: Child | null = null;
let pool: pg.Pool | null = null;

async function measure(shape: Shape, url: string, apiKey: string, index: number) {
  const params: LoadParams = {
    url,
    apiKey,
    runId,
    mode: 'throughput',
    endpoint: shape.endpoint,
    tag: `s${index}-`,
    batches: shape.requests,
    warmupBatches: Math.max(2 * shape.concurrency, Math.min(200, Math.ceil(shape.requests / 10))),
    holdAfterWarmup: true,
    batchSize: shape.batchSize,
    concurrency: shape.concurrency,
    maxSeconds,
    timeoutMs: 120_000,
  };
  const load = spawnTsx('bench/lib/load.ts', { ...childEnv, BENCH_LOAD_PARAMS: JSON.stringify(params) }, 'load', [], {
    stdin: true,
  });
  const timeoutMs = (maxSeconds * 3 + 120) * 1000;
  await load.waitFor(/load: warm/, timeoutMs);
  const cpu0 = cpuSeconds(gateway!.pid);
  const threads0 = threadCpuSeconds(gateway!.pid);
  load.child.stdin!.end('go\n');
  const r = await resultOf<LoadResult>(load, 'load generator', timeoutMs);
  const cpu = cpuSeconds(gateway!.pid) - cpu0;
  const threads = threadCpuSeconds(gateway!.pid);
  const byThread: Record<string, number> = { 'event loop': 0, 'batch-parse': 0, 'kafka-producer': 0, other: 0 };
  for (const [name, seconds] of threads) {
    byThread[threadNames.includes(name) ? name : 'other']! += seconds - (threads0.get(name) ?? 0);
  }
  const ok = r.statuses['200'] ?? 0;
  return {
    shape,
    statuses: r.statuses,
    errors: r.errors,
    errorSamples: r.errorSamples,
    seconds: r.seconds,
    targets: r.acceptedTargets,
    targetsPerSecond: r.targetsPerSecond,
    requestsPerSecond: r.requestsPerSecond,
    latencyMs: r.latencyMs,
    gatewayCpuSeconds: round(cpu, 2),
    /** CPU ms per 1,000 accepted targets, whole gateway and by thread. */
    cpuMsPer1000Targets: r.acceptedTargets > 0 ? round((cpu * 1e6) / r.acceptedTargets, 1) : null,
    cpuMsPer1000ByThread: Object.fromEntries(
      Object.entries(byThread).map(([k, s]) => [
        k,
        r.acceptedTargets > 0 ? round((s * 1e6) / r.acceptedTargets, 1) : null,
      ]),
    ),
    cpuMsPerRequest: ok > 0 ? round((cpu * 1000) / ok, 3) : null,
  };
}

const brokers = loadConfig(childEnv).kafka.brokers;

async function run() {
  log(`run ${runId}: ${shapes.length} shapes`);
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });
  await ensureDatabase(databaseUrl);
  await migrateUp(databaseUrl);
  pool = createPool(databaseUrl, 2, 'bench-shapes');
  const tenant = (await demo.run({ pool, warn: () => undefined }, { name: 'bench-shapes' })) as {
    clients: Record<string, { apiKey: string }>;
  };
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
  const apiKey = (tenant.clients['inbound.targets.batch.write'] ?? tenant.clients.all!).apiKey;
  const singleKey = (tenant.clients['inbound.targets.write'] ?? tenant.clients.all!).apiKey;
  gateway = spawnTsx('src/gateway/server.ts', { ...childEnv, HOST: '127.0.0.1', PORT: '0' }, 'gateway', [
    ...benchGatewayNodeFlags(),
    ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : []),
  ]);
  const url = (await gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  const results = [];
  for (const [i, shape] of shapes.entries()) {
    log(`${shape.label}: ${shape.requests} requests`);
    results.push(await measure(shape, url, shape.endpoint === 'single' ? singleKey : apiKey, i));
  }

  const livez = results.find((r) => r.shape.endpoint === 'livez') ?? { cpuMsPerRequest: null };
  const fmt = (n: number | null, d = 1) =>
    n === null ? '-' : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  console.log(
    `\nGateway CPU by load shape, ${machineCores()} cores, load average at start ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')} (run ${runId})\n`,
  );
  const header = [
    'shape',
    'CPU ms/1,000 targets',
    'event loop / parse / producer / other',
    'CPU ms/request',
    'targets/s',
    'p50 / p99 ms',
    'answers',
  ];
  const rows = results.map((r) => [
    r.shape.label,
    r.shape.endpoint === 'livez' ? '-' : fmt(r.cpuMsPer1000Targets),
    r.shape.endpoint === 'livez'
      ? '-'
      : ['event loop', 'batch-parse', 'kafka-producer', 'other']
          .map((k) => fmt(r.cpuMsPer1000ByThread[k]!))
          .join(' / '),
    `${fmt(r.cpuMsPerRequest, 2)}${r.shape.endpoint === 'livez' ? ' (bare)' : ` (${fmt((r.cpuMsPerRequest ?? NaN) / (livez.cpuMsPerRequest ?? NaN), 1)} × livez)`}`,
    r.shape.endpoint === 'livez' ? '-' : fmt(r.targetsPerSecond, 0),
    `${fmt(r.latencyMs.p50)} / ${fmt(r.latencyMs.p99)}`,
    Object.entries(r.statuses)
      .map(([s, n]) => `${n} × ${s}`)
      .join(', ') + (r.errors ? `, ${r.errors} errors` : ''),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(line(row));

  const runAt = new Date().toISOString();
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `inbound-shapes-${runAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ benchmark: 'inbound-shapes', runAt, runId, cores: machineCores(), results }, null, 2)}\n`,
  );
  console.log(`\nresults: ${file.slice(repoRoot.length)}`);
}

async function teardown() {
  await gateway?.stop();
  await pool?.end().catch(() => undefined);
  await deleteRunArtifacts(brokers, topicPrefix).catch((err: Error) => log(`could not delete topics: ${err.message}`));
  await db.drop(log);
}

await runBench(run, teardown);
