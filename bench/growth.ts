// `npm run bench:growth` (issue 51, "a year of data"): the same pushes, applies and reads on an
// EMPTY freshly migrated database and on one FILLED with other tenants' data, side by side
// (empty | filled | empty again; filled against the mean of the two empty runs, one before it and
// one after, so that the machine's drift and the order show as their difference). Asserts nothing;
// the aim (issue 51): every figure within 20 % of the empty database, and the read endpoints' p99
// ≤ 50 ms at 1M jobs.
//
// The filled database (bench/lib/growth-fill.ts, in SQL): GROWTH_TARGETS targets (10M) over
// GROWTH_TENANTS other tenants (200), GROWTH_OTHER_JOBS of their import jobs (1M) and GROWTH_JOBS
// of the measured client (1M) with their chunks, GROWTH_ROUTE_DRAFTS route drafts (100k),
// GROWTH_WEBHOOK_EVENTS webhook events (2M: about 1.7 a second over EVENT_RETENTION_HOURS, 336 h)
// with their deliveries and attempts. It is filled once into connect_growth_template_<targets> and
// kept: a later run with the same sizes reuses it (the tree's new migrations applied to it first;
// filled again when one of its migrations is no longer in the tree or a new one fails), copies it
// (CREATE DATABASE … TEMPLATE, STRATEGY FILE_COPY) and measures on the copy, which it drops at the
// end. GROWTH_REFILL=1 fills it again; drop it by hand to free the disk (about 9.3 GB at 10M
// targets; the copy takes as much again while a run lasts).
//
// On each database, in this order, through a gateway and a worker runner of the tree:
//   new      GROWTH_BATCHES batches (200) of GROWTH_BATCH_SIZE new targets (1,000) pushed by
//            bench/lib/load.ts on GROWTH_CONCURRENCY connections (4): the gateway's request p99;
//            then the workers apply them (bench/lib/apply-phase.ts): targets/s until every job is final
//   update   the same batches under new batch ids (every target an update), pushed and applied
//   replay   the first push's requests again (same externalBatchId, the idempotency key): every
//            one answers the job it made (idempotentReplay); and GROWTH_REQUESTS one-target
//            batches pushed, then sent again, one at a time (the replay without a body to parse)
//   reads    GET /api/v1/import-jobs one request at a time, GROWTH_REQUESTS each (200): the first
//            page, each filter, the page reached by following nextCursor half-way into the
//            client's jobs (walked with take=200; GROWTH_WALK_JOBS: less deep), and one import job
//   sizes    pg_total_relation_size / pg_indexes_size of the big tables
// Results: stdout, and bench/results/growth-<time>.json (and growth-latest.json).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp, migrationsDir, pendingMigrations } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { applyPhase, type ApplyPhase } from './lib/apply-phase.js';
import { benchDatabase, type BenchDatabase } from './lib/bench-database.js';
import { envInt } from './lib/env.js';
import { fillGrowth, growthFillVersion, tableSizes, type FillStep, type GrowthFill } from './lib/growth-fill.js';
import { deleteRunArtifacts } from './lib/kafka-admin.js';
import type { LoadParams, LoadResult } from './lib/load.js';
import {
  benchGatewayNodeFlags,
  brokerPid,
  machineFacts,
  runBench,
  runForResult,
  spawnTsx,
  type Child,
} from './lib/processes.js';
import { readFigures, walkCursor } from './lib/read-figures.js';
import { capacityEnv } from './lib/service-env.js';
import { round } from './lib/stats.js';

const repoRoot = new URL('..', import.meta.url).pathname;
const fill: GrowthFill = {
  version: growthFillVersion,
  targets: envInt('GROWTH_TARGETS', 10_000_000),
  tenants: envInt('GROWTH_TENANTS', 200),
  otherJobs: envInt('GROWTH_OTHER_JOBS', 1_000_000),
  jobs: envInt('GROWTH_JOBS', 1_000_000),
  routeDrafts: envInt('GROWTH_ROUTE_DRAFTS', 100_000),
  webhookEvents: envInt('GROWTH_WEBHOOK_EVENTS', 2_000_000),
  retentionHours: envInt('EVENT_RETENTION_HOURS', 336),
};
const opts = {
  batches: envInt('GROWTH_BATCHES', 200),
  batchSize: envInt('GROWTH_BATCH_SIZE', 1000),
  concurrency: envInt('GROWTH_CONCURRENCY', 4),
  requests: envInt('GROWTH_REQUESTS', 200),
  maxSeconds: envInt('GROWTH_MAX_SECONDS', 300),
  /** How deep the cursor walk goes; 0 (default): half the client's jobs. */
  walkJobs: envInt('GROWTH_WALK_JOBS', 0, 0),
  refill: process.env.GROWTH_REFILL === '1',
};
const runId = randomBytes(4).toString('hex');
const log = (line: string) => process.stderr.write(`bench:growth: ${line}\n`);
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const brokers = (process.env.KAFKA_BROKERS || '127.0.0.1:9092').split(',');
const templateName = `connect_growth_template_${fill.targets}`;
const template = benchDatabase(templateName);

type Tenant = { tenantId: string; clients: Record<string, { clientId: string; apiKey: string }> };

const children = new Set<Child>();
const databases: BenchDatabase[] = [];
const topicPrefixes: string[] = [];

/** A statement on the server's `postgres` database (CREATE / DROP DATABASE). */
async function onServer(sql: string) {
  const url = new URL(serverUrl);
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

type TemplateFacts = {
  measured: Tenant;
  fill: GrowthFill;
  steps: FillStep[];
  fillMs: number;
  filledAt: string;
  /** The template's migrations (pgmigrations), read when it is looked at. */
  applied?: string[];
};

/** The tree's migrations, by name (as pgmigrations records them). */
const treeMigrations = () =>
  readdirSync(migrationsDir)
    .filter((f) => /\.(sql|js|cjs|mjs|ts)$/.test(f))
    .map((f) => f.replace(/\.[^.]+$/, ''));

/**
 * The filled template: reused when filled with these sizes and every migration it has is still in
 * the tree (the tree's new ones are applied to it first: cheaper than filling again); else filled now.
 */
async function ensureTemplate(): Promise<TemplateFacts & { reused: boolean; migrated: string[] }> {
  if (!opts.refill) {
    const facts = await templateFacts();
    // Key by key: jsonb keeps its keys in an order of its own.
    const sameSizes = facts && (Object.keys(fill) as (keyof GrowthFill)[]).every((k) => facts.fill[k] === fill[k]);
    const tree = new Set(treeMigrations());
    const gone = facts?.applied?.filter((name) => !tree.has(name)) ?? [];
    if (facts && sameSizes && gone.length === 0) {
      const pending = await pendingMigrations(template.url);
      try {
        if (pending.length > 0) {
          log(`template ${templateName}: applying ${pending.length} new migrations (${pending.join(', ')})`);
          await migrateUp(template.url);
        }
        return { ...facts, reused: true, migrated: pending };
      } catch (err) {
        log(`template ${templateName}: the new migrations failed (${(err as Error).message}): filling it again`);
      }
    } else if (facts) {
      log(
        `template ${templateName}: ${sameSizes ? `migrations no longer in the tree (${gone.join(', ')})` : 'filled with other sizes'}: filling it again`,
      );
    }
  }
  await template.drop(log);
  await ensureDatabase(template.url);
  await migrateUp(template.url);
  const pool = createPool(template.url, 2, 'bench-growth-fill');
  try {
    const measured = (await demo.run({ pool, warn: () => undefined }, { name: 'growth' })) as Tenant;
    await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
    log(
      `filling ${templateName}: ${fill.targets} targets of ${fill.tenants} tenants, ${fill.otherJobs} + ${fill.jobs} import jobs, ` +
        `${fill.routeDrafts} route drafts, ${fill.webhookEvents} webhook events`,
    );
    const started = performance.now();
    const steps = await fillGrowth(
      pool,
      { tenantId: measured.tenantId, clientId: measured.clients.all!.clientId },
      fill,
      log,
    );
    const fillMs = Math.round(performance.now() - started);
    // Written last: a template without it (an interrupted fill) is filled again.
    await pool.query(`CREATE TABLE bench_growth_template (facts jsonb NOT NULL)`);
    const facts: TemplateFacts = { measured, fill, steps, fillMs, filledAt: new Date().toISOString() };
    await pool.query(`INSERT INTO bench_growth_template (facts) VALUES ($1)`, [JSON.stringify(facts)]);
    return { ...facts, reused: false, migrated: [] };
  } finally {
    await pool.end();
  }
}

async function templateFacts(): Promise<TemplateFacts | null> {
  const client = new pg.Client({ connectionString: template.url });
  try {
    await client.connect();
  } catch {
    return null; // no template yet
  }
  try {
    const { rows } = await client.query(
      `SELECT facts FROM bench_growth_template WHERE to_regclass('public.bench_growth_template') IS NOT NULL`,
    );
    const facts = rows[0]?.facts as TemplateFacts | undefined;
    if (!facts) return null;
    const applied = (await client.query<{ name: string }>('SELECT name FROM pgmigrations')).rows.map((r) => r.name);
    return { ...facts, applied };
  } catch {
    return null;
  } finally {
    await client.end();
  }
}

async function startGateway(env: NodeJS.ProcessEnv, label: string) {
  const child = spawnTsx('src/gateway/server.ts', { ...env, HOST: '127.0.0.1', PORT: '0' }, label, [
    ...benchGatewayNodeFlags(),
  ]);
  children.add(child);
  const base = (await child.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  return { child, base };
}

type Measured = Awaited<ReturnType<typeof measure>>;

async function measure(label: 'empty' | 'filled' | 'emptyAgain', database: BenchDatabase, tenant: Tenant) {
  const topicPrefix = `bench-growth-${runId}-${label}.`;
  topicPrefixes.push(topicPrefix);
  const env = capacityEnv(database.url, topicPrefix);
  const config = loadConfig(env);
  const pool = createPool(database.url, 4, 'bench-growth');
  const client = tenant.clients.all!;
  const timeoutMs = (opts.maxSeconds * 2 + 120) * 1000;
  const lastJob = async () =>
    Number((await pool.query('SELECT coalesce(max(id), 0) AS id FROM import_jobs')).rows[0].id);
  const jobsSince = async (id: number) =>
    Number(
      (
        await pool.query('SELECT count(*) AS n FROM import_jobs WHERE tenant_id = $1 AND id > $2', [
          tenant.tenantId,
          id,
        ])
      ).rows[0].n,
    );
  const load = (params: Partial<LoadParams>, what: string) =>
    runForResult<LoadResult>(
      'bench/lib/load.ts',
      { ...env, BENCH_LOAD_PARAMS: JSON.stringify({ ...loadParams, ...params }) },
      `load (${label}, ${what})`,
      timeoutMs,
    );
  const gateway = await startGateway(env, `gateway-${label}`);
  const loadParams: LoadParams = {
    url: gateway.base,
    apiKey: client.apiKey,
    runId,
    mode: 'throughput',
    tag: 'g-',
    batches: opts.batches,
    warmupBatches: 2 * opts.concurrency,
    batchSize: opts.batchSize,
    concurrency: opts.concurrency,
    maxSeconds: opts.maxSeconds,
    timeoutMs: 60_000,
  };
  const applyParams = {
    pool,
    broker: brokerPid(Number(brokers[0]!.split(':').at(-1))),
    dbName: database.name,
    env,
    applyConcurrency: config.workers.applyConcurrency,
    tenantId: tenant.tenantId,
    timeoutMs,
    onRunner: (runner: Child | null) => runner && children.add(runner),
  };
  try {
    log(`${label}: pushing ${opts.batches} × ${opts.batchSize} new targets`);
    const beforeNew = await lastJob();
    const pushNew = await load({}, 'new');
    const applyNew = await applyPhase({
      ...applyParams,
      phase: 'new',
      afterJobId: beforeNew,
      jobs: await jobsSince(beforeNew),
    });
    log(`${label}: new targets applied at ${applyNew.targetsPerSecond}/s; pushing them again as updates`);
    const beforeUpdates = await lastJob();
    const pushUpdates = await load({ batchIdSuffix: '-again' }, 'updates');
    const applyUpdates = await applyPhase({
      ...applyParams,
      phase: 'updates',
      afterJobId: beforeUpdates,
      jobs: await jobsSince(beforeUpdates),
    });
    log(`${label}: updates applied at ${applyUpdates.targetsPerSecond}/s; idempotent replays`);
    const beforeReplays = await lastJob();
    const replayBatches = await load({}, 'replays of the batches');
    const small = { tag: 'r-', batchSize: 1, batches: opts.requests, warmupBatches: 0, concurrency: 1 };
    const pushSmall = await load(small, 'one-target batches');
    const replaySmall = await load(small, 'replays of the one-target batches');
    const newJobsByReplays = (await jobsSince(beforeReplays)) - opts.requests;

    const jobs = Number(
      (await pool.query('SELECT count(*) AS n FROM import_jobs WHERE client_id = $1', [client.clientId])).rows[0].n,
    );
    const depth = Math.min(opts.walkJobs || Math.floor(jobs / 2), Math.floor(jobs / 2));
    log(`${label}: reads (${jobs} import jobs of the client); following nextCursor ${depth} jobs deep`);
    const walk = await walkCursor(gateway.base, client.apiKey, depth);
    const oneJob = (
      await pool.query('SELECT id FROM import_jobs WHERE client_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1', [
        client.clientId,
        depth,
      ])
    ).rows[0].id;
    const reads = await readFigures(
      gateway.base,
      client.apiKey,
      {
        'first page': '/api/v1/import-jobs',
        'status=Failed': '/api/v1/import-jobs?status=Failed',
        'status=Completed': '/api/v1/import-jobs?status=Completed',
        'status=Queued': '/api/v1/import-jobs?status=Queued',
        'sourceSystem=erp-1': '/api/v1/import-jobs?sourceSystem=erp-1',
        'sourceSystem=bench-erp': '/api/v1/import-jobs?sourceSystem=bench-erp',
        'sourceSystem + status': '/api/v1/import-jobs?sourceSystem=erp-1&status=CompletedWithErrors',
        [`cursor page ${walk.passed} deep`]: `/api/v1/import-jobs?cursor=${walk.cursor}`,
        'one import job': `/api/v1/import-jobs/${oneJob}`,
      },
      opts.requests,
    );
    const sizes = await tableSizes(pool);
    return {
      jobs,
      pushNew,
      applyNew,
      pushUpdates,
      applyUpdates,
      replayBatches,
      pushSmall,
      replaySmall,
      newJobsByReplays,
      walk,
      reads,
      sizes,
    };
  } finally {
    await gateway.child.stop();
    children.delete(gateway.child);
    await pool.end();
    await deleteRunArtifacts(brokers, topicPrefix).catch((err: Error) =>
      log(`could not delete topics: ${err.message}`),
    );
  }
}

const mib = (bytes: number) => round(bytes / 1024 / 1024, 0);

function report(
  runs: { empty: Measured; filled: Measured; emptyAgain: Measured },
  facts: Awaited<ReturnType<typeof ensureTemplate>>,
  copyMs: number,
  loadAtStart: number[],
) {
  const { empty, filled, emptyAgain } = runs;
  type Row = {
    name: string;
    empty: number;
    filled: number;
    emptyAgain: number;
    unit: string;
    higherIsBetter?: boolean;
    aimMs?: number;
  };
  const rows: Row[] = [];
  const figure = (name: string, unit: string, pick: (m: Measured) => number, more: Partial<Row> = {}) =>
    rows.push({ name, unit, empty: pick(empty), filled: pick(filled), emptyAgain: pick(emptyAgain), ...more });
  const apply = (name: string, pick: (m: Measured) => ApplyPhase) =>
    figure(name, 'targets/s', (m) => pick(m).targetsPerSecond, { higherIsBetter: true });
  const p99 = (name: string, pick: (m: Measured) => { p99: number }, aimMs?: number) =>
    figure(name, 'ms p99', (m) => round(pick(m).p99), { aimMs });
  apply('applied: new targets', (m) => m.applyNew);
  apply('applied: updates of existing targets', (m) => m.applyUpdates);
  const chunkP50 = (name: string, pick: (m: Measured) => ApplyPhase) =>
    figure(name, 'ms p50', (m) => round(pick(m).applyMs.p50));
  chunkP50('a chunk of new targets applied', (m) => m.applyNew);
  chunkP50('a chunk of updates applied', (m) => m.applyUpdates);
  p99(`gateway: push of ${opts.batchSize} new targets`, (m) => m.pushNew.latencyMs);
  p99(`gateway: push of ${opts.batchSize} updates`, (m) => m.pushUpdates.latencyMs);
  p99(`idempotent replay, ${opts.batchSize}-target batch`, (m) => m.replayBatches.latencyMs);
  p99('idempotent replay, one-target batch', (m) => m.replaySmall.latencyMs);
  p99('push of a one-target batch (before its replay)', (m) => m.pushSmall.latencyMs);
  // The reads by position: the cursor page's name says how deep it is, which differs per database.
  const readNames = (m: Measured) => Object.keys(m.reads);
  readNames(filled).forEach((name, i) => {
    const shown = name.startsWith('cursor page')
      ? `cursor page (${empty.walk.passed} | ${filled.walk.passed} deep)`
      : name;
    figure(`GET import-jobs: ${shown}`, 'ms p99', (m) => round(m.reads[readNames(m)[i]!]!.p99), { aimMs: 50 });
  });
  p99('GET import-jobs: the cursor walk, take=200, each page', (m) => m.walk, 50);

  // Filled against the mean of the two empty runs (one before it, one after).
  const table = rows.map((r) => {
    const emptyMean = (r.empty + r.emptyAgain) / 2;
    const ratio = r.filled / emptyMean;
    const off = r.higherIsBetter ? ratio < 0.8 : ratio > 1.2;
    const overAim = r.aimMs !== undefined && r.filled > r.aimMs;
    return [
      r.name,
      String(r.empty),
      String(r.filled),
      String(r.emptyAgain),
      `${ratio.toFixed(2)}×`,
      `${(r.emptyAgain / r.empty).toFixed(2)}×`,
      r.unit,
      [off ? 'off by > 20 %' : '', overAim ? `over ${r.aimMs} ms` : ''].filter(Boolean).join(', '),
    ];
  });
  const sizeRows = filled.sizes.map((f) => {
    const e = empty.sizes.find((s) => s.table === f.table);
    return [
      `${f.table} (rows)`,
      `${mib(e?.totalBytes ?? 0)} (${mib(e?.indexBytes ?? 0)})`,
      `${mib(f.totalBytes)} (${mib(f.indexBytes)})`,
      '',
      '',
      '',
      'MiB (indexes)',
      `${e?.rows ?? 0} | ${f.rows}`,
    ];
  });
  const header = ['', 'empty', 'filled', 'empty again', 'filled/empty', 'again/empty', 'unit', 'note'];
  const all = [header, ...table, ...sizeRows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i >= 1 && i <= 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const total = filled.sizes.reduce((s, x) => s + x.totalBytes, 0);
  const fillLine = facts.reused
    ? `template ${templateName} reused (filled in ${round(facts.fillMs / 1000, 0)} s on ${facts.filledAt}` +
      `${facts.migrated.length > 0 ? `; ${facts.migrated.length} new migrations applied to it` : ''})`
    : `template ${templateName} filled in ${round(facts.fillMs / 1000, 0)} s`;
  const out = [
    '',
    `bench:growth (run ${runId}): the measured client beside ${fill.targets} targets of ${fill.tenants} other tenants, ` +
      `${fill.otherJobs} of their import jobs, ${fill.jobs} of its own, ${fill.routeDrafts} route drafts, ` +
      `${fill.webhookEvents} webhook events (${fill.retentionHours} h); ${opts.batches} × ${opts.batchSize} targets pushed on ${opts.concurrency} connections`,
    `${fillLine}; copied for this run in ${round(copyMs / 1000, 0)} s; big tables ${mib(total)} MiB`,
    ...facts.steps.map((s) => `  fill: ${s.step}: ${round(s.ms / 1000, 1)} s`),
    '',
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...all.slice(1).map(line),
    '',
    `CPU of other processes (not the bench's, the broker's or PostgreSQL's) during the applies, of ${machineFacts(loadAtStart).cpus} cores: ` +
      `empty ${empty.applyNew.cpu.otherCores} (new), ${empty.applyUpdates.cpu.otherCores} (updates); ` +
      `filled ${filled.applyNew.cpu.otherCores}, ${filled.applyUpdates.cpu.otherCores}; ` +
      `empty again ${emptyAgain.applyNew.cpu.otherCores}, ${emptyAgain.applyUpdates.cpu.otherCores}`,
    'filled/empty: against the mean of the two empty runs (before and after the filled one); again/empty: how far apart those two are (the noise)',
    `replays made no new import job: empty ${empty.newJobsByReplays === 0}, filled ${filled.newJobsByReplays === 0}, ` +
      `empty again ${emptyAgain.newJobsByReplays === 0}; ` +
      `statuses: ${JSON.stringify(filled.replayBatches.statuses)} ${JSON.stringify(filled.replaySmall.statuses)}`,
    `machine: ${machineFacts(loadAtStart).cpus} cores, load average at start ${loadAtStart.join(' ')}, at end ${loadavg()
      .map((n) => round(n, 2))
      .join(' ')}`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  return rows;
}

/** The empty side: a freshly migrated database with the demo tenant, measured. */
async function measureEmpty(label: 'empty' | 'emptyAgain') {
  const db = benchDatabase(`connect_growth_${label.toLowerCase()}_${runId}`);
  databases.push(db);
  await ensureDatabase(db.url);
  await migrateUp(db.url);
  const pool = createPool(db.url, 2, 'bench-growth');
  const tenant = (await demo.run({ pool, warn: () => undefined }, { name: 'growth' })) as Tenant;
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
  await pool.end();
  return measure(label, db, tenant);
}

async function run() {
  const loadAtStart = loadavg().map((n) => round(n, 2));
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });
  const facts = await ensureTemplate();
  log(facts.reused ? `template ${templateName} reused` : `template filled in ${round(facts.fillMs / 1000, 0)} s`);

  const empty = await measureEmpty('empty');
  const filledDb = benchDatabase(`connect_growth_filled_${runId}`);
  databases.push(filledDb);
  log(`copying ${templateName}`);
  const copyStarted = performance.now();
  await onServer(`CREATE DATABASE ${filledDb.name} TEMPLATE ${templateName} STRATEGY FILE_COPY`);
  const copyMs = performance.now() - copyStarted;
  const filled = await measure('filled', filledDb, facts.measured);
  await filledDb.drop(log); // before the next phase, so that its disk and page cache are free
  databases.splice(databases.indexOf(filledDb), 1);
  // The empty database once more, after the filled one: whatever the machine (or the order: cold
  // processes, page cache) did to one phase shows as the two empty runs' difference.
  const emptyAgain = await measureEmpty('emptyAgain');

  const rows = report({ empty, filled, emptyAgain }, facts, copyMs, loadAtStart);
  const result = {
    benchmark: 'growth',
    runAt: new Date().toISOString(),
    runId,
    machine: machineFacts(loadAtStart),
    fill,
    options: opts,
    template: {
      name: templateName,
      reused: facts.reused,
      migrated: facts.migrated,
      fillMs: facts.fillMs,
      filledAt: facts.filledAt,
      steps: facts.steps,
    },
    copyMs: round(copyMs, 0),
    rows,
    empty,
    filled,
    emptyAgain,
  };
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const json = `${JSON.stringify(result, null, 2)}\n`;
  writeFileSync(join(dir, `growth-${result.runAt.replace(/[:.]/g, '-')}.json`), json);
  writeFileSync(join(dir, 'growth-latest.json'), json);
}

async function teardown() {
  await Promise.allSettled([...children].map((c) => c.stop()));
  for (const prefix of topicPrefixes) await deleteRunArtifacts(brokers, prefix).catch(() => undefined);
  for (const db of databases) await db.drop(log);
}

await runBench(run, teardown);
