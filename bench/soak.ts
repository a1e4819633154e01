// `npm run bench:soak` (issue 51, "a size that stops growing"): retention set to minutes and a
// steady mixed load for BENCH_SOAK_MINUTES (default 30), on a database of its own
// (bench/lib/bench-database.ts) on a PostgreSQL cluster of its own at PostgreSQL's defaults
// (test/support/throwaway-postgres.ts, fsync on: autovacuum on whatever the machine's server says)
// but for autovacuum's naptime, BENCH_SOAK_AUTOVACUUM_NAPTIME (5s: retention in minutes compresses
// time some 8,000-fold, and a 60 s naptime would then stand for vacuums days apart; 'default' keeps
// 60 s); BENCH_SOAK_FILLFACTOR (100: as migrated) sets the pruned tables' fillfactor for an
// experiment; BENCH_SOAK_POSTGRES=server uses DATABASE_URL's server as it is set instead), served by a
// gateway and one worker runner of the tree hosting every
// kind (inbound, inbound-express, jobs, materials, appointments, the webhook dispatcher; the
// retention pruner runs in it), with a webhook receiver on 127.0.0.1 (bench/lib/webhook-receivers.ts)
// that an endpoint of the load's client ('*' event types) points at.
//
// Retention: IMPORT_JOB_RETENTION_DAYS, DEAD_LETTER_RETENTION_DAYS and EVENT_RETENTION_HOURS set
// to BENCH_SOAK_RETENTION_MINUTES (default 5), RETENTION_PRUNE_INTERVAL_MS and
// EVENT_PRUNE_INTERVAL_MS to BENCH_SOAK_PRUNE_INTERVAL_MS (15 s).
//
// Load (one tenant's "all" client, each lane paced, one request at a time per lane):
//   batches   BENCH_SOAK_BATCH_TARGETS (5,000) targets every BENCH_SOAK_BATCH_SECONDS (10 s), an
//             import job of a few chunks each; every other batch re-sends the previous batch's
//             targets with new coordinates (updates), the others are new targets
//   singles   BENCH_SOAK_SINGLES_PER_SECOND (2) single targets (new)
//   jobs      a field job every 2 s; usages: a material usage every 2 s (a demo work order)
//   routes    every 60 s a batch of 15 targets and, once applied, a route suggestion of it
//   reads     BENCH_SOAK_READS_PER_SECOND (4): the import-job list's first page, the newest
//             import job, the webhook endpoints, in turn
//
// Every BENCH_SOAK_SAMPLE_SECONDS (30) it samples table + index sizes, live and dead tuples and
// the last autovacuum of the tables that grow (bench/lib/soak-sample.ts), the interval's apply
// times (import jobs' created_at to completed_at), and the load's read and write latencies. At the
// end: a table over time, the verdict (each pruned table's size at the first sample after the
// first retention period + a prune interval against the end, aim ±10 %; p99 first third vs last
// third; the most dead tuples), the footprint per target and per import job, the server's
// PostgreSQL settings; bench/results/soak-<time>.json, soak-latest.json and soak-latest.svg.
// Business tables (targets, field jobs, usages) are kept by design and grow with the load: they
// are printed apart. Asserts nothing.
import { randomBytes, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { demo } from '../src/admin/commands/demo.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { createEndpoint } from '../src/shared/webhooks/endpoints.js';
import { makeTargets } from '../test/support/targets.js';
import { benchSourceSystem } from './lib/batches.js';
import { benchDatabase, type BenchDatabase } from './lib/bench-database.js';
import { envInt } from './lib/env.js';
import { deleteRunArtifacts } from './lib/kafka-admin.js';
import { benchGatewayNodeFlags, machineFacts, runBench, spawnTsx, type Child } from './lib/processes.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../test/support/throwaway-postgres.js';
import { capacityEnv } from './lib/service-env.js';
import { soakPlot } from './lib/soak-plot.js';
import {
  applyTimes,
  keptTables,
  prunedTables,
  sampleTables,
  verdict,
  type Sample,
  type Verdict,
} from './lib/soak-sample.js';
import { percentiles, round } from './lib/stats.js';

const repoRoot = new URL('..', import.meta.url).pathname;
const opts = {
  minutes: envInt('BENCH_SOAK_MINUTES', 30),
  retentionMinutes: envInt('BENCH_SOAK_RETENTION_MINUTES', 5),
  pruneIntervalMs: envInt('BENCH_SOAK_PRUNE_INTERVAL_MS', 15_000, 100),
  sampleSeconds: envInt('BENCH_SOAK_SAMPLE_SECONDS', 30),
  batchTargets: envInt('BENCH_SOAK_BATCH_TARGETS', 5000),
  batchSeconds: envInt('BENCH_SOAK_BATCH_SECONDS', 10),
  singlesPerSecond: envInt('BENCH_SOAK_SINGLES_PER_SECOND', 2),
  readsPerSecond: envInt('BENCH_SOAK_READS_PER_SECOND', 4),
  autovacuumNaptime: process.env.BENCH_SOAK_AUTOVACUUM_NAPTIME || '5s',
  /** The pruned tables' fillfactor (%), set after the migrations; 100 (PostgreSQL's default) leaves them as they are. */
  fillfactor: envInt('BENCH_SOAK_FILLFACTOR', 100, 10),
};
const ownServer = process.env.BENCH_SOAK_POSTGRES !== 'server';
const runId = randomBytes(4).toString('hex');
let database: BenchDatabase | undefined;
let cluster: ThrowawayPostgres | undefined;
const topicPrefix = `bench-soak-${runId}.`;
const brokers = (process.env.KAFKA_BROKERS || '127.0.0.1:9092').split(',');
const log = (line: string) => process.stderr.write(`bench:soak: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const children: Child[] = [];
let pool: ReturnType<typeof createPool> | undefined;

/** The latencies of the current interval; the sampler takes them and starts new ones. */
type Bucket = { reads: number[]; writes: number[]; readErrors: number; writeErrors: number };
const newBucket = (): Bucket => ({ reads: [], writes: [], readErrors: 0, writeErrors: 0 });
let bucket = newBucket();
const statuses: Record<string, Record<string, number>> = {};
const routeMs: number[] = [];
/** Every latency of the run by lane, for the per-lane p99. */
const laneMs: Record<string, number[]> = {};
let newestJobId: number | null = null;

async function send(lane: string, base: string, apiKey: string, path: string, body?: unknown) {
  const started = performance.now();
  let status = 0;
  let answer: Record<string, unknown> | null = null;
  try {
    const res = await fetch(base + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    status = res.status;
    const text = await res.text();
    answer = text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : null;
  } catch {
    status = 0; // connection refused or reset
  }
  const ms = performance.now() - started;
  (statuses[lane] ??= {})[status] = (statuses[lane]![status] ?? 0) + 1;
  const ok = status >= 200 && status < 300;
  (laneMs[lane] ??= []).push(ms);
  if (lane === 'route') routeMs.push(ms);
  else if (body === undefined) {
    bucket.reads.push(ms);
    if (!ok) bucket.readErrors++;
  } else {
    bucket.writes.push(ms);
    if (!ok) bucket.writeErrors++;
  }
  return { status, answer, ms };
}

/** Runs `fn` every `everyMs` (a slow call delays the next, never overlaps it) until `until`. */
async function paced(everyMs: number, until: number, fn: (i: number) => Promise<void>) {
  let next = Date.now();
  for (let i = 0; Date.now() < until; i++) {
    await fn(i);
    next += everyMs;
    const wait = next - Date.now();
    if (wait > 0) await sleep(Math.min(wait, until - Date.now()));
    else next = Date.now(); // behind: carry on from now, do not burst to catch up
  }
}

type Demo = {
  tenantId: string;
  clients: Record<string, { clientId: string; apiKey: string }>;
  workOrders: { workOrderId: number }[];
};

function load(base: string, tenant: Demo, until: number) {
  const key = tenant.clients.all!.apiKey;
  const workOrder = tenant.workOrders[0]!.workOrderId;
  const batches = paced(opts.batchSeconds * 1000, until, async (i) => {
    // Even batches: new targets; odd ones: the previous batch's targets again, moved (updates).
    const targets =
      i % 2 === 0
        ? makeTargets(opts.batchTargets, `${runId}-n${i}`, i + 1)
        : makeTargets(opts.batchTargets, `${runId}-n${i - 1}`, i + 1000);
    const body = `{"sourceSystem":${JSON.stringify(benchSourceSystem)},"externalBatchId":"${runId}-b${i}","targets":${JSON.stringify(targets)}}`;
    const { answer } = await send('batch', base, key, '/api/v1/inbound/targets/batch', body);
    if (typeof answer?.importJobId === 'number') newestJobId = answer.importJobId;
  });
  const singles = paced(1000 / opts.singlesPerSecond, until, async (i) => {
    await send('single', base, key, '/api/v1/inbound/targets', {
      sourceSystem: 'soak-single',
      ...makeTargets(1, `${runId}-s${i}`, i + 1)[0],
    });
  });
  const jobs = paced(2000, until, async (i) => {
    await send('job', base, key, '/api/v1/connect/jobs', {
      externalId: `JOB-${runId}-${i}`,
      title: `Soak job ${i}`,
      jobType: 'MAINTENANCE',
      customer: { name: 'ACME' },
      site: { address: { line1: `Main ${(i % 90) + 1}`, city: 'Berlin', countryCode: 'DE' } },
    });
  });
  const usages = paced(2000, until, async (i) => {
    await send('usage', base, key, `/api/v1/connect/work-orders/${workOrder}/materials`, {
      externalEventId: `${runId}-u${i}`,
      externalLocationCode: 'WH-MAIN',
      usedAt: new Date().toISOString(),
      materials: [{ sku: 'CU-PIPE-15', quantity: 0.125, unitOfMeasure: 'm' }],
    });
  });
  const routes = paced(60_000, until, async (i) => {
    const { answer } = await send('routeBatch', base, key, '/api/v1/inbound/targets/batch', {
      sourceSystem: 'soak-routes',
      targets: makeTargets(15, `${runId}-r${i}`, i + 7),
    });
    const id = answer?.importJobId;
    if (typeof id !== 'number') return;
    for (let tries = 0; tries < 60 && Date.now() < until; tries++) {
      const job = await send('routeWait', base, key, `/api/v1/import-jobs/${id}`);
      if (['Completed', 'CompletedWithErrors', 'Failed'].includes(String(job.answer?.status))) break;
      await sleep(500);
    }
    await send('route', base, key, `/api/v1/import-jobs/${id}/route-suggestion`, {
      date: '2026-11-23',
      timeZone: 'Europe/Berlin',
      depot: { latitude: 52.5, longitude: 13.4 },
      vehicles: 2,
      shift: { start: '07:00', end: '19:00' },
    });
  });
  const readPaths = () => [
    '/api/v1/import-jobs',
    newestJobId === null ? '/api/v1/import-jobs?take=5' : `/api/v1/import-jobs/${newestJobId}`,
    '/api/v1/webhook-endpoints',
  ];
  const reads = paced(1000 / opts.readsPerSecond, until, async (i) => {
    const paths = readPaths();
    await send(['list', 'job', 'endpoints'][i % 3]!, base, key, paths[i % 3]!);
  });
  return Promise.all([batches, singles, jobs, usages, routes, reads]);
}

const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);
const p99 = (values: number[]) => round(percentiles(values).p99);

function printTable(samples: Sample[]) {
  const cols = [
    ['min', 5],
    ['pruned MiB', 10],
    ['maps', 5],
    ['jobs', 6],
    ['chunks', 6],
    ['events', 6],
    ['deliv', 6],
    ['attem', 6],
    ['routes', 6],
    ['dead max', 8],
    ['kept MiB', 8],
    ['targets', 8],
    ['apply p99 B', 11],
    ['S', 6],
    ['read p99', 8],
    ['write p99', 9],
    ['unfin', 5],
    ['hooks', 6],
  ] as const;
  const lines = [cols.map(([h, w]) => h.padStart(w)).join(' ')];
  for (const s of samples) {
    const m = (t: string) => mib(s.tables[t]?.totalBytes ?? 0);
    const dead = Math.max(...prunedTables.map((t) => s.tables[t]?.dead ?? 0));
    const cells = [
      round(s.t / 60, 1),
      mib(s.prunedBytes),
      mib(s.prunedMapBytes ?? 0),
      m('import_jobs'),
      m('import_job_chunks'),
      m('webhook_events'),
      m('webhook_deliveries'),
      m('webhook_attempts'),
      m('route_suggestions'),
      dead,
      mib(s.keptBytes),
      m('targets'),
      p99(s.apply.Batch),
      p99(s.apply.Single),
      p99(s.reads),
      p99(s.writes),
      s.unfinishedJobs,
      s.webhooksReceived,
    ];
    lines.push(cells.map((c, i) => String(c).padStart(cols[i]![1])).join(' '));
  }
  return lines;
}

function verdictLines(v: Verdict) {
  const mark = (pct: number) => (Number.isFinite(pct) && Math.abs(pct) <= 10 ? 'held' : 'missed');
  const lines = [
    `pruned tables together: ${v.pruned.startMiB} MiB at start, ${v.pruned.afterRetentionMiB} MiB at ${round(v.referenceSeconds / 60, 1)} min (first retention period + a prune interval), ${v.pruned.endMiB} MiB at the end (max after retention ${v.pruned.maxMiB}): ${v.pruned.changePercent} % (aim ±10 %: ${mark(v.pruned.changePercent)})`,
    `the same without the free-space and visibility maps (${v.prunedData.mapsAfterRetentionMiB} → ${v.prunedData.mapsEndMiB} MiB of the above, created once per relation): ${v.prunedData.afterRetentionMiB} → ${v.prunedData.endMiB} MiB (max after retention ${v.prunedData.maxMiB}): ${v.prunedData.changePercent} % (aim ±10 %: ${mark(v.prunedData.changePercent)})`,
    `a retention period later (${round(v.settled.seconds / 60, 1)} min) to the end: ${v.settled.prunedMiB} → ${v.settled.endMiB} MiB, ${v.settled.changePercent} % (${mark(v.settled.changePercent)}; between ${v.settled.minMiB} and ${v.settled.maxMiB} MiB meanwhile); by table: ${JSON.stringify(v.settled.tables)} %`,
    'each table (MiB: start / after retention / end / max after retention; change after retention; rows after retention → end):',
  ];
  for (const [t, s] of Object.entries(v.sizes))
    lines.push(
      `  ${(s.kept ? `${t} (kept)` : t).padEnd(28)} ${s.startMiB} / ${s.afterRetentionMiB} / ${s.endMiB} / ${s.maxMiB}; ${s.changePercent} %${s.kept ? '' : ` (${mark(s.changePercent)})`}; rows ${s.rowsAfterRetention} → ${s.rowsAtEnd}`,
    );
  lines.push('p99 of the first third vs the last third of the run (ms):');
  for (const [n, p] of Object.entries(v.p99))
    lines.push(`  ${n.padEnd(12)} ${p.firstThirdP99} → ${p.lastThirdP99} (${p.ratio}×)`);
  lines.push('most dead tuples seen (live then; autovacuums in the run):');
  for (const [t, d] of Object.entries(v.deadTuples))
    if (d.maxDead > 0 || d.autovacuums > 0)
      lines.push(`  ${t.padEnd(28)} ${d.maxDead} dead (${d.liveThen} live); ${d.autovacuums} autovacuums`);
  return lines;
}

/** Bytes per target and per import job, by kind, on disk at the end (table + indexes, free space included). */
async function footprint(p: NonNullable<typeof pool>) {
  const q = async (sql: string) => (await p.query(sql)).rows;
  const [targets] = await q(
    `SELECT count(*)::bigint AS rows, pg_total_relation_size('targets') AS total, pg_relation_size('targets') AS heap,
            pg_indexes_size('targets') AS indexes, pg_total_relation_size('targets') / greatest(count(*), 1) AS bytes_per_row
       FROM targets`,
  );
  const [jobs] = await q(
    `SELECT (SELECT count(*) FROM import_jobs)::bigint AS jobs,
            pg_total_relation_size('import_jobs') + pg_total_relation_size('import_job_chunks') + pg_total_relation_size('route_suggestions') AS total,
            (pg_total_relation_size('import_jobs') + pg_total_relation_size('import_job_chunks') + pg_total_relation_size('route_suggestions'))
              / greatest((SELECT count(*) FROM import_jobs), 1) AS bytes_per_job`,
  );
  // What a job's rows hold (data only, no free space or index): batch and single apart.
  const byKind = await q(
    `SELECT j.kind, count(*)::int AS jobs, round(avg(pg_column_size(j.*))) AS job_row_bytes,
            round(avg(coalesce(c.n, 0)), 1) AS chunks_per_job, round(avg(coalesce(c.bytes, 0))) AS chunk_bytes_per_job,
            round(avg(j.accepted_count)) AS targets_per_job
       FROM import_jobs j
       LEFT JOIN (SELECT import_job_id, count(*) AS n, sum(pg_column_size(c.*)) AS bytes FROM import_job_chunks c GROUP BY 1) c
         ON c.import_job_id = j.id
      GROUP BY j.kind`,
  );
  const [events] = await q(
    `SELECT (SELECT count(*) FROM webhook_events)::bigint AS events,
            (pg_total_relation_size('webhook_events') + pg_total_relation_size('webhook_deliveries') + pg_total_relation_size('webhook_attempts'))
              / greatest((SELECT count(*) FROM webhook_events), 1) AS bytes_per_event`,
  );
  return { targets, importJobs: { ...jobs, byKind }, webhookEvents: events };
}

async function serverSettings(p: NonNullable<typeof pool>) {
  const { rows } = await p.query<{ name: string; setting: string; unit: string | null }>(
    `SELECT name, setting, unit FROM pg_settings
      WHERE name IN ('server_version', 'shared_buffers', 'work_mem', 'maintenance_work_mem', 'effective_cache_size',
                     'max_wal_size', 'min_wal_size', 'checkpoint_timeout', 'wal_compression', 'synchronous_commit',
                     'fillfactor', 'random_page_cost', 'max_connections')
         OR name LIKE 'autovacuum%'
      ORDER BY name`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.unit ? `${r.setting} ${r.unit}` : r.setting]));
}

async function run() {
  const loadAtStart = loadavg().map((n) => round(n, 2));
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });
  if (ownServer) {
    const naptime: Record<string, string> =
      opts.autovacuumNaptime === 'default' ? {} : { autovacuum_naptime: opts.autovacuumNaptime };
    cluster = await startThrowawayPostgres({ settings: { fsync: 'on', ...naptime } });
    process.env.DATABASE_URL = cluster.url; // the bench's own database beside the cluster's `connect`
  }
  database = benchDatabase(`connect_bench_soak_${runId}`);
  await ensureDatabase(database.url);
  await migrateUp(database.url);
  pool = createPool(database.url, 4, 'bench-soak');
  // An experiment (issue 51): pages of a pruned table left room from the start may keep its size
  // at the first retention period's, where packed pages grow by a quarter under churn.
  if (opts.fillfactor < 100)
    for (const t of prunedTables) await pool.query(`ALTER TABLE ${t} SET (fillfactor = ${opts.fillfactor})`);
  const tenant = (await demo.run({ pool, warn: () => undefined }, { name: 'soak' })) as Demo;

  const receivers = spawnTsx('bench/lib/webhook-receivers.ts', { ...process.env }, 'receivers');
  children.push(receivers);
  const ports = JSON.parse((await receivers.waitFor(/receivers: (\{.*\})/))[1]!) as Record<string, number>;
  await createEndpoint(pool, {
    tenantId: tenant.tenantId,
    clientId: tenant.clients.all!.clientId,
    url: `http://127.0.0.1:${ports.healthy}/soak`,
    eventTypes: '*',
  });

  const retentionDays = (opts.retentionMinutes / 1440).toFixed(6);
  const env: NodeJS.ProcessEnv = {
    ...capacityEnv(database.url, topicPrefix),
    RATE_LIMIT_PER_MINUTE: '1000000',
    IMPORT_JOB_RETENTION_DAYS: retentionDays,
    DEAD_LETTER_RETENTION_DAYS: retentionDays,
    EVENT_RETENTION_HOURS: (opts.retentionMinutes / 60).toFixed(6),
    RETENTION_PRUNE_INTERVAL_MS: String(opts.pruneIntervalMs),
    EVENT_PRUNE_INTERVAL_MS: String(opts.pruneIntervalMs),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  };
  const gateway = spawnTsx('src/gateway/server.ts', { ...env, HOST: '127.0.0.1', PORT: '0' }, 'gateway', [
    ...benchGatewayNodeFlags(),
  ]);
  children.push(gateway);
  const base = (await gateway.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  const workers = spawnTsx(
    'src/workers/runner.ts',
    { ...env, WORKERS: '', WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0' },
    'workers',
  );
  children.push(workers);
  await workers.waitFor(/workers: running/);
  log(
    `database ${database.name}, gateway ${base}, retention ${opts.retentionMinutes} min, prune every ${opts.pruneIntervalMs} ms; load for ${opts.minutes} min`,
  );

  const samples: Sample[] = [];
  let received = 0;
  const arrivals = async () => {
    const res = await fetch(`http://127.0.0.1:${ports.control}/arrivals?from=${received}`);
    received += ((await res.json()) as unknown[]).length;
    return received;
  };
  const startedAt = Date.now();
  let previous = new Date();
  const takeSample = async () => {
    const now = new Date();
    const taken = bucket;
    bucket = newBucket();
    const tables = await sampleTables(pool!);
    const applied = await applyTimes(pool!, previous, now);
    previous = now;
    const s: Sample = {
      t: round((now.getTime() - startedAt) / 1000, 1),
      at: now.toISOString(),
      ...tables,
      ...applied,
      reads: taken.reads.map((ms) => round(ms, 1)),
      writes: taken.writes.map((ms) => round(ms, 1)),
      readErrors: taken.readErrors,
      writeErrors: taken.writeErrors,
      webhooksReceived: await arrivals(),
    };
    samples.push(s);
    log(
      `${round(s.t / 60, 1)} min: pruned tables ${mib(s.prunedBytes)} MiB, kept ${mib(s.keptBytes)} MiB; apply p99 ${p99(s.apply.Batch)} ms (batch) ${p99(s.apply.Single)} ms (single); read p99 ${p99(s.reads)} ms, write p99 ${p99(s.writes)} ms; errors ${s.readErrors}/${s.writeErrors}; ${s.unfinishedJobs} jobs unfinished; ${s.webhooksReceived} webhooks`,
    );
  };
  await takeSample();
  const until = startedAt + opts.minutes * 60_000;
  const running = load(base, tenant, until);
  // A sample at every interval's end, the last at the load's end.
  const sampler = (async () => {
    for (let k = 1; ; k++) {
      const at = Math.min(startedAt + k * opts.sampleSeconds * 1000, until);
      const wait = at - Date.now();
      if (wait > 0) await sleep(wait);
      await takeSample();
      if (at >= until) return;
    }
  })();
  await Promise.all([running, sampler]);
  for (const c of children) if (c.child.exitCode !== null) log(`${c.pid} exited early: ${c.output().slice(-2000)}`);

  const referenceSeconds = opts.retentionMinutes * 60 + opts.pruneIntervalMs / 1000;
  const v = verdict(samples, referenceSeconds, opts.sampleSeconds);
  const foot = await footprint(pool);
  const settings = await serverSettings(pool);
  const lines = [
    `bench:soak (${opts.minutes} min of mixed load, retention ${opts.retentionMinutes} min, prune interval ${opts.pruneIntervalMs / 1000} s, a sample every ${opts.sampleSeconds} s)`,
    'sizes in MiB (table + indexes); apply p99: accept → final of the import jobs finished in the interval (B batch, S single); read/write p99 of the load in the interval; unfin: import jobs not final; hooks: webhooks received so far',
    `kept tables (${keptTables.join(', ')}) grow with the load by design: "kept MiB" and "targets"`,
    ...printTable(samples),
    ...verdictLines(v),
    `footprint at the end: targets ${foot.targets.bytes_per_row} bytes/row on disk (${foot.targets.rows} rows, ${mib(Number(foot.targets.total))} MiB); import jobs with chunks and drafts ${foot.importJobs.bytes_per_job} bytes/job (${foot.importJobs.jobs} kept); webhook event with its deliveries and attempts ${foot.webhookEvents.bytes_per_event} bytes`,
    `  by kind: ${JSON.stringify(foot.importJobs.byKind)}`,
    `requests by lane and status: ${JSON.stringify(statuses)}`,
    `p99 by lane over the run (ms): ${JSON.stringify(Object.fromEntries(Object.entries(laneMs).map(([l, ms]) => [l, p99(ms)])))}`,
    `PostgreSQL (${ownServer ? "the bench's own cluster" : "DATABASE_URL's server"}): ${JSON.stringify(settings)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  const svg = soakPlot(samples, {
    minutes: opts.minutes,
    retentionMinutes: opts.retentionMinutes,
    referenceMinutes: referenceSeconds / 60,
    sampleSeconds: opts.sampleSeconds,
    date: new Date().toISOString().slice(0, 10),
  });
  const result = {
    benchmark: 'soak',
    runAt: new Date().toISOString(),
    runId,
    options: opts,
    machine: machineFacts(loadAtStart),
    verdict: v,
    footprint: foot,
    postgres: ownServer
      ? `own cluster, PostgreSQL defaults, autovacuum_naptime ${opts.autovacuumNaptime}` +
        (opts.fillfactor < 100 ? `, pruned tables' fillfactor ${opts.fillfactor}` : '')
      : "DATABASE_URL's server",
    postgresSettings: settings,
    statuses,
    laneP99: Object.fromEntries(Object.entries(laneMs).map(([l, ms]) => [l, p99(ms)])),
    routeSuggestion: { ...percentiles(routeMs), count: routeMs.length },
    samples,
  };
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const json = `${JSON.stringify(result, null, 1)}\n`;
  writeFileSync(join(dir, `soak-${result.runAt.replace(/[:.]/g, '-')}.json`), json);
  writeFileSync(join(dir, 'soak-latest.json'), json);
  writeFileSync(join(dir, 'soak-latest.svg'), svg);
  log('wrote bench/results/soak-latest.json and soak-latest.svg');
}

/** BENCH_SOAK_REPLOT=<a soak JSON>: writes bench/results/soak-latest.svg from that run's samples, runs nothing. */
async function replot(file: string) {
  const r = JSON.parse(readFileSync(file, 'utf8')) as {
    runAt: string;
    options: typeof opts;
    verdict: Verdict;
    samples: Sample[];
  };
  const svg = soakPlot(r.samples, {
    minutes: r.options.minutes,
    retentionMinutes: r.options.retentionMinutes,
    referenceMinutes: r.verdict.referenceSeconds / 60,
    sampleSeconds: r.options.sampleSeconds,
    date: r.runAt.slice(0, 10),
  });
  writeFileSync(join(repoRoot, 'bench/results/soak-latest.svg'), svg);
  const v = verdict(r.samples, r.verdict.referenceSeconds, r.options.sampleSeconds);
  process.stdout.write(`${[...printTable(r.samples), ...verdictLines(v)].join('\n')}\n`);
  log(`wrote bench/results/soak-latest.svg from ${file}`);
}

if (process.env.BENCH_SOAK_REPLOT) await replot(process.env.BENCH_SOAK_REPLOT);
else
  await runBench(run, async () => {
    for (const c of children.reverse()) await c.stop();
    await pool?.end().catch(() => undefined);
    await deleteRunArtifacts(brokers, topicPrefix).catch((err: unknown) => log(`topics: ${(err as Error).message}`));
    await database?.drop(log);
    await cluster?.destroy();
  });
