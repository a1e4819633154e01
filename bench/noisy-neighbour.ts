// `npm run bench:noisy`: what one abusive client does to everyone else (issue 12). Brings up what
// it needs (the local broker via scripts/kafka up, a throwaway database, two tenants), runs the
// gateway as its own process and the abuser (bench/lib/abuser.ts) as another, and measures from
// this process, as a well-behaved client of the other tenant would see it:
//
//   quiet   the victim alone for BENCH_PHASE_SECONDS: rounds of GET /livez, GET import-jobs and
//           POST a single target, one after another; meanwhile a prober asks /livez every 50 ms.
//   abused  the same while the abuser sends the worst it may (see bench/lib/abuser.ts).
//   ignoresRetryAfter, chunked  the same while the abuser sends its largest batches on the flood
//           connections, again at once after a 429, or without Content-Length (issue 24).
//   worst   (issue 31, memory) a gateway of its own, started with the manifests' memory limit as
//           its budget (BENCH_WORST_BUDGET_BYTES: 768 MiB; every phase's gateway has it, or
//           GATEWAY_MEMORY_BUDGET_BYTES from the environment) and upload
//           quotas so large that they shield nothing, and one worker runner per deployment of
//           deploy/k8s/workers.yaml; the abuser in mode `worst` (bench/lib/abuser.ts) with
//           max(BENCH_FLOODS, INBOUND_MAX_IN_FLIGHT) flood connections, so the largest bodies
//           reach the in-flight limit, and drafts of a 5,000-target import job on twice
//           ROUTE_SUGGESTION_MAX_IN_FLIGHT connections. Prints every process's peak RSS against
//           the budget, whether any died, and the victim's answers and latency. BENCH_WORST_DRAFTS:
//           the draft connections instead.
//   refused (issue 53, memory) a gateway of its own at the same budget and the default upload
//           quotas, and one client sending 10 MB bodies refused 413 on BENCH_REFUSED_CONNECTIONS
//           (64) connections at once, one after another on each: the gateway discards from all of
//           them at once (bench/lib/refused-phase.ts). Prints its peak RSS against the budget, the
//           most connections lingering at once, the client's answers and the victim's.
//
// Every phase prints its processes' peak RSS (bench/lib/peaks.ts). BENCH_PHASES (comma-separated,
// default neighbour,worst) picks quiet to chunked (neighbour), worst and refused.
// Prints p50/p99 of each request kind in both phases and their ratios, the gateway's event-loop
// delay (its own monitorEventLoopDelay, via /metrics) and CPU, the abuser's answers, and writes
// bench/results/noisy-neighbour-<time>.json and -latest.json. Asserts nothing: the goals (issue
// 12: /livez p99 under 50 ms while abused; the victim's p99 within 2× of quiet) are printed
// next to the figures. Options (env): BENCH_PHASE_SECONDS (20), BENCH_FLOODS (8),
// BENCH_TRICKLES (16), BENCH_CPU_PROF (a directory: the gateway writes a V8 CPU profile there),
// BENCH_GATEWAY_NODE_FLAGS and BENCH_LOG_DIR (as bench/inbound.ts),
// DATABASE_URL, KAFKA_BROKERS (127.0.0.1:9092), and the gateway's own settings (UPLOAD_BYTES_PER_SECOND
// above all: the abuser's upload quota).
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
import type { AbuserParams, AbuserResult } from './lib/abuser.js';
import { peaksLine, watchPeaks, type PeakRss } from './lib/peaks.js';
import { runRefusedPhase } from './lib/refused-phase.js';
import { runWorstPhase } from './lib/worst-phase.js';
import { deleteRunArtifacts } from './lib/kafka-admin.js';
import {
  brokerPid,
  cpuSeconds,
  machineCores,
  machineFacts,
  machineCpu,
  runForResult,
  benchGatewayNodeFlags,
  spawnTsx,
  type Child,
} from './lib/processes.js';
import { percentiles, round, type Percentiles } from './lib/stats.js';
import { envInt } from './lib/env.js';

const opts = {
  phaseSeconds: envInt('BENCH_PHASE_SECONDS', 20, 0),
  floods: envInt('BENCH_FLOODS', 8, 0),
  trickles: envInt('BENCH_TRICKLES', 16, 0),
  phases: (process.env.BENCH_PHASES ?? 'neighbour,worst').split(',').filter(Boolean),
  worstBudgetBytes: envInt('BENCH_WORST_BUDGET_BYTES', 768 * 1024 * 1024, 0),
  refusedConnections: envInt('BENCH_REFUSED_CONNECTIONS', 64, 1),
};
const goals = { livezP99Ms: 50, victimP99Ratio: 2 };

const repoRoot = new URL('..', import.meta.url).pathname;
const runId = randomBytes(4).toString('hex');
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/connect_bench_noisy_${runId}`;
const databaseUrl = dbUrl.toString();
const brokersEnv = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
const topicPrefix = `bench-noisy-${runId}.`;
const brokers = loadConfig({ ...process.env, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokersEnv }).kafka.brokers;
const childEnv: NodeJS.ProcessEnv = {
  ...process.env,
  DATABASE_URL: databaseUrl,
  KAFKA_BROKERS: brokersEnv,
  KAFKA_TOPIC_PREFIX: topicPrefix,
  BODY_READ_TIMEOUT_MS: '5000',
  LOG_LEVEL: 'warn',
  // The gateway as the manifests run it: its budget is the pod's limit (auto finds none here).
  GATEWAY_MEMORY_BUDGET_BYTES: process.env.GATEWAY_MEMORY_BUDGET_BYTES || String(opts.worstBudgetBytes),
};
/** The abuser's share (the gateway's UPLOAD_BYTES_PER_SECOND, from the environment or its default). */
const uploadQuota = loadConfig(childEnv).limits.uploadBytesPerSecond;
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Tenant = { tenantId: string; clients: Record<string, { apiKey: string; clientId: string }> };
type Sample = { ms: number; status: number };
type Phase = { livez: Sample[]; prober: Sample[]; read: Sample[]; push: Sample[]; loopDelay: LoopDelay };
type LoopDelay = { p99Ms: number; maxMs: number };

async function timed(url: URL, init?: RequestInit): Promise<Sample> {
  const started = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
    await res.arrayBuffer();
    return { ms: performance.now() - started, status: res.status };
  } catch {
    return { ms: performance.now() - started, status: 0 };
  }
}

/** The gateway's event-loop delay since its previous scrape (prom-client resets it per collection). */
async function loopDelay(base: string): Promise<LoopDelay> {
  const text = await (await fetch(new URL('/metrics', base))).text();
  const metric = (name: string) => Number(text.match(new RegExp(`^${name} ([\\d.e+-]+)$`, 'm'))?.[1] ?? NaN) * 1000;
  return {
    p99Ms: round(metric('nodejs_eventloop_lag_p99_seconds')),
    maxMs: round(metric('nodejs_eventloop_lag_max_seconds')),
  };
}

async function measure(base: string, apiKey: string, seconds: number): Promise<Phase> {
  const phase: Phase = { livez: [], prober: [], read: [], push: [], loopDelay: { p99Ms: NaN, maxMs: NaN } };
  await loopDelay(base); // starts the gateway's histogram afresh
  const until = Date.now() + seconds * 1000;
  const headers = { authorization: `Bearer ${apiKey}` };
  const prober = (async () => {
    while (Date.now() < until) {
      phase.prober.push(await timed(new URL('/livez', base)));
      await sleep(50);
    }
  })();
  for (let n = 0; Date.now() < until; n++) {
    phase.livez.push(await timed(new URL('/livez', base)));
    phase.read.push(await timed(new URL('/api/v1/import-jobs?take=5', base), { headers }));
    phase.push.push(
      await timed(new URL('/api/v1/inbound/targets', base), {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          sourceSystem: 'victim',
          externalId: `v-${runId}-${seconds}-${n}`,
          name: 'Victim site',
          coordinates: { latitude: 52.5, longitude: 13.4 },
        }),
      }),
    );
  }
  await prober;
  phase.loopDelay = await loopDelay(base);
  return phase;
}

const summary = (samples: Sample[]) => ({
  count: samples.length,
  statuses: samples.reduce<Record<string, number>>((m, s) => ((m[s.status] = (m[s.status] ?? 0) + 1), m), {}),
  ms: Object.fromEntries(
    Object.entries(percentiles(samples.map((s) => s.ms))).map(([k, v]) => [k, round(v)]),
  ) as Percentiles,
});

/** Cores busy meanwhile: the whole machine, the gateway, the broker (from /proc). */
function coresUsed(gatewayPid: number, broker: number | null) {
  const m0 = machineCpu();
  const g0 = cpuSeconds(gatewayPid);
  const b0 = broker === null ? NaN : cpuSeconds(broker);
  const t0 = performance.now();
  return () => {
    const seconds = (performance.now() - t0) / 1000;
    const m1 = machineCpu();
    return {
      machine: round((m1.busy - m0.busy) / seconds, 2),
      gateway: round((cpuSeconds(gatewayPid) - g0) / seconds, 2),
      broker: round((broker === null ? NaN : cpuSeconds(broker) - b0) / seconds, 2),
    };
  };
}

const phaseReport = (p: Phase) => ({
  livez: summary(p.livez),
  livezProber: summary(p.prober),
  importJobsRead: summary(p.read),
  singlePush: summary(p.push),
  gatewayLoopDelayMs: p.loopDelay,
});

let gateway = null as Child | null;
let pool = null as pg.Pool | null;

async function run() {
  const loadAtStart = loadavg().map((n) => round(n, 2));
  log(`run ${runId}: ${opts.phaseSeconds} s per phase; abuser: ${opts.floods} floods, ${opts.trickles} trickles`);
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });
  await ensureDatabase(databaseUrl);
  await migrateUp(databaseUrl);
  pool = createPool(databaseUrl, 2, 'bench-noisy');
  const abuserTenant = (await demo.run({ pool, warn: () => undefined }, { name: 'abuser' })) as Tenant;
  const victimTenant = (await demo.run({ pool, warn: () => undefined }, { name: 'victim' })) as Tenant;
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');

  const neighbour = opts.phases.includes('neighbour')
    ? await neighbourPhases(abuserTenant, victimTenant, loadAtStart)
    : null;
  const worst = opts.phases.includes('worst')
    ? await runWorstPhase({
        childEnv,
        floods: opts.floods,
        trickles: opts.trickles,
        phaseSeconds: opts.phaseSeconds,
        ...(process.env.BENCH_WORST_DRAFTS ? { draftConnections: envInt('BENCH_WORST_DRAFTS', 0, 0) } : {}),
        abuserKey: abuserTenant.clients.all!.apiKey,
        victimKey: victimTenant.clients.all!.apiKey,
        measure,
        summary,
        log,
      })
    : null;
  const refused = opts.phases.includes('refused')
    ? await runRefusedPhase({
        childEnv,
        connections: opts.refusedConnections,
        phaseSeconds: opts.phaseSeconds,
        abuserKey: abuserTenant.clients.all!.apiKey,
        victimKey: victimTenant.clients.all!.apiKey,
        measure,
        summary,
        log,
      })
    : null;
  const result = {
    benchmark: 'noisy-neighbour',
    runAt: new Date().toISOString(),
    runId,
    machine: machineFacts(loadAtStart),
    options: opts,
    ...neighbour?.result,
    worst: worst?.result ?? null,
    refused: refused?.result ?? null,
  };
  process.stdout.write(
    [...(neighbour?.lines ?? []), ...(worst?.lines ?? []), ...(refused?.lines ?? []), ''].join('\n'),
  );
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const json = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(join(dir, `noisy-neighbour-${result.runAt.replace(/[:.]/g, '-')}.json`), json);
  writeFileSync(join(dir, 'noisy-neighbour-latest.json'), json);
}

/** quiet, abused, ignoresRetryAfter, chunked (issues 12 and 24): the figures and the lines printed. */
async function neighbourPhases(abuserTenant: Tenant, victimTenant: Tenant, loadAtStart: number[]) {
  const profDir = process.env.BENCH_CPU_PROF;
  const profArgs = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  gateway = spawnTsx('src/gateway/server.ts', { ...childEnv, HOST: '127.0.0.1', PORT: '0' }, 'gateway', [
    ...benchGatewayNodeFlags(),
    ...profArgs,
  ]);
  const base = (await gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  const victimKey = victimTenant.clients.all!.apiKey;
  await measure(base, victimKey, 3); // warm-up: JIT, connections, topics

  const broker = brokerPid(Number(brokers[0]!.split(':').at(-1)));
  log('quiet: the victim alone');
  const quietCores = coresUsed(gateway.pid, broker);
  const quietPeaks = watchPeaks({ gateway: gateway.pid });
  const quiet = await measure(base, victimKey, opts.phaseSeconds);
  const coresQuiet = quietCores();
  const peaks: Record<string, Record<string, PeakRss>> = { quiet: quietPeaks.stop() };

  const abuserParams: AbuserParams = {
    url: base,
    apiKey: abuserTenant.clients.all!.apiKey,
    seconds: opts.phaseSeconds + 8,
    floods: opts.floods,
    trickles: opts.trickles,
  };
  /** The victim measured while the abuser runs in `mode`. */
  async function abusedBy(mode: NonNullable<AbuserParams['mode']>) {
    const params = { ...abuserParams, mode };
    const abuser = runForResult<AbuserResult>(
      'bench/lib/abuser.ts',
      { ...childEnv, BENCH_ABUSER_PARAMS: JSON.stringify(params) },
      'abuser',
      (opts.phaseSeconds + 120) * 1000,
    );
    await sleep(6000); // the abuser builds its bodies (about 3 s) and gets going
    const cores = coresUsed(gateway!.pid, broker);
    const watching = watchPeaks({ gateway: gateway!.pid });
    const phase = await measure(base, victimKey, opts.phaseSeconds);
    const result = { phase, cores: cores(), abuser: await abuser };
    peaks[mode === 'waits' ? 'abused' : mode] = watching.stop();
    return result;
  }
  log('abused: the victim while the abuser sends the worst it may');
  const { phase: abused, cores: coresAbused, abuser: abuserResult } = await abusedBy('waits');
  const modes = {} as Record<'ignoresRetryAfter' | 'chunked', Awaited<ReturnType<typeof abusedBy>>>;
  for (const mode of ['ignoresRetryAfter', 'chunked'] as const) {
    log(`${mode}: the victim while the abuser sends its largest batches (${mode})`);
    modes[mode] = await abusedBy(mode);
  }

  const report = { quiet: phaseReport(quiet), abused: phaseReport(abused) };
  type Kind = Exclude<keyof ReturnType<typeof phaseReport>, 'gatewayLoopDelayMs'>;
  const p99 = (phase: 'quiet' | 'abused', kind: Kind) => report[phase][kind].ms.p99;
  const ratio = (kind: Kind) => round(p99('abused', kind) / p99('quiet', kind), 2);
  const livezP99 = Math.max(p99('abused', 'livez'), p99('abused', 'livezProber'));
  await gateway.stop();
  gateway = null;
  const result = {
    ...report,
    peakRss: peaks,
    coresUsed: { quiet: coresQuiet, abused: coresAbused },
    abuser: abuserResult,
    abuserModes: Object.fromEntries(
      Object.entries(modes).map(([m, r]) => [m, { ...phaseReport(r.phase), coresUsed: r.cores, abuser: r.abuser }]),
    ),
    ratios: {
      livezP99: ratio('livezProber'),
      importJobsReadP99: ratio('importJobsRead'),
      singlePushP99: ratio('singlePush'),
    },
    goals: {
      ...goals,
      livezMet: livezP99 < goals.livezP99Ms,
      readMet: ratio('importJobsRead') <= goals.victimP99Ratio,
      pushMet: ratio('singlePush') <= goals.victimP99Ratio,
    },
  };

  const line = (label: string, kind: Kind) => {
    const q = report.quiet[kind];
    const a = report.abused[kind];
    return `${label.padEnd(26)} ${`${q.ms.p50} / ${q.ms.p99}`.padStart(14)}  ${`${a.ms.p50} / ${a.ms.p99}`.padStart(16)}  ${String(ratio(kind)).padStart(6)}  ${JSON.stringify(a.statuses)}`;
  };
  const out = [
    '',
    `noisy neighbour (${opts.phaseSeconds} s per phase; machine load ${loadAtStart.join(' ')})`,
    `${'ms, p50 / p99'.padEnd(26)} ${'quiet'.padStart(14)}  ${'abused'.padStart(16)}  ${'p99 ×'.padStart(6)}  abused statuses`,
    line('GET /livez (in rounds)', 'livez'),
    line('GET /livez (every 50 ms)', 'livezProber'),
    line('GET import-jobs', 'importJobsRead'),
    line('POST a single target', 'singlePush'),
    `gateway event-loop delay p99/max ms: quiet ${quiet.loopDelay.p99Ms}/${quiet.loopDelay.maxMs}, abused ${abused.loopDelay.p99Ms}/${abused.loopDelay.maxMs}`,
    `cores busy (machine/gateway/broker) of ${machineCores()}: quiet ${coresQuiet.machine}/${coresQuiet.gateway}/${coresQuiet.broker}, ` +
      `abused ${coresAbused.machine}/${coresAbused.gateway}/${coresAbused.broker}`,
    `abuser: ${abuserResult.requests} requests ${JSON.stringify(abuserResult.statuses)}, ${round(abuserResult.bytesSent / 1048576)} MiB sent, ` +
      `${round(abuserResult.bytesAccepted / 1048576 / abuserParams.seconds, 2)} MiB/s accepted (upload quota ${round(uploadQuota / 1048576, 2)} MiB/s per client)`,
    '',
    `${'victim p99 ms (× quiet)'.padEnd(26)} ${'ignores Retry-After'.padStart(22)}  ${'chunked'.padStart(22)}`,
    ...(['livezProber', 'importJobsRead', 'singlePush'] as const).map((kind) => {
      const cell = (m: keyof typeof modes) => {
        const v = phaseReport(modes[m].phase)[kind].ms;
        return `${v.p50} / ${v.p99} (${round(v.p99 / p99('quiet', kind), 2)}×)`.padStart(22);
      };
      return `${kind.padEnd(26)} ${cell('ignoresRetryAfter')}  ${cell('chunked')}`;
    }),
    ...(['ignoresRetryAfter', 'chunked'] as const).map(
      (m) =>
        `abuser ${m}: ${modes[m].abuser.requests} requests ${JSON.stringify(modes[m].abuser.statuses)}, ` +
        `${round(modes[m].abuser.bytesAccepted / 1048576 / abuserParams.seconds, 2)} MiB/s accepted; ` +
        `cores busy (machine/gateway) ${modes[m].cores.machine}/${modes[m].cores.gateway}`,
    ),
    `goals: /livez p99 < ${goals.livezP99Ms} ms: ${result.goals.livezMet ? 'met' : 'NOT met'} (${livezP99}); ` +
      `victim p99 within ${goals.victimP99Ratio}×: reads ${result.goals.readMet ? 'met' : 'NOT met'}, ` +
      `single pushes ${result.goals.pushMet ? 'met' : 'NOT met'}`,
    ...Object.entries(peaks).map(([phase, p]) => `peak RSS ${phase}: ${peaksLine(p)}`),
  ];
  return { result, lines: out };
}

try {
  await run();
} finally {
  await gateway?.stop();
  await pool?.end();
  await deleteRunArtifacts(brokers, topicPrefix).catch((err: Error) => log(`cleanup of topics failed: ${err.message}`));
  const maintenance = new URL(serverUrl);
  maintenance.pathname = '/postgres';
  const admin = createPool(maintenance.toString(), 1, 'bench-noisy-cleanup');
  await admin.query(`DROP DATABASE IF EXISTS "${dbUrl.pathname.slice(1)}" WITH (FORCE)`).catch(() => undefined);
  await admin.end();
}
