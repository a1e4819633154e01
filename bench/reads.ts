// `npm run bench:reads` (issue 49): the read endpoints on a database with a year of history, and
// what one client's reads do to another tenant. Its own database, filled in SQL (not through the
// API): BENCH_JOBS import jobs (default 1M) of the measured client, one every 30 s back from now
// across three source systems and every final status, and BENCH_OTHER_TENANTS tenants with
// BENCH_OTHER_JOBS jobs each beside them (default 20 × 50,000), and BENCH_NEWER_JOBS (300,000) of
// one more tenant made after them all (a client that still imports beside one that paused: the
// measured client's newest job is not the table's). A gateway process of the tree
// (src/gateway/server.ts) serves it; the broker is the project's (scripts/kafka).
//
// 1. Lists: p50/p99 of GET /api/v1/import-jobs for the first page, each filter, a page reached by
//    cursor deep in the history and the deepest offset page, one request at a time; beside them
//    the statement the list ran before issue 49 (count(*) of the whole history, OFFSET), run on
//    PostgreSQL alone as the baseline.
// 2. Fairness: another tenant's reads and writes (list, webhook endpoints, a single target) alone
//    (quiet), then beside the measured client's 40 connections of the deepest reads it may send,
//    with the tenant shares as configured and again with them off (DATABASE_TENANT_SHARE_PERCENT
//    100, first come first served, as before issue 49). Rate limits are raised so only the
//    database decides; then once more with the shares and the measured client at its default rate
//    limit (the case: reads inside the rate limit). Prints figures and ratios; asserts nothing.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { demo } from '../src/admin/commands/demo.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { fillImportJobHistory } from '../test/support/history.js';
import { makeTargets } from '../test/support/targets.js';
import { benchDatabase } from './lib/bench-database.js';
import { benchGatewayNodeFlags, spawnTsx, type Child } from './lib/processes.js';
import { capacityEnv } from './lib/service-env.js';
import { percentiles, resultPrefix, round, type Percentiles } from './lib/stats.js';

const repoRoot = new URL('..', import.meta.url).pathname;
const envInt = (name: string, byDefault: number) => Number(process.env[name] ?? byDefault);
const opts = {
  jobs: envInt('BENCH_JOBS', 1_000_000),
  otherTenants: envInt('BENCH_OTHER_TENANTS', 20),
  otherJobs: envInt('BENCH_OTHER_JOBS', 50_000),
  newerJobs: envInt('BENCH_NEWER_JOBS', 300_000),
  requests: envInt('BENCH_REQUESTS', 200),
  phaseSeconds: envInt('BENCH_PHASE_SECONDS', 15),
  noisyConnections: envInt('BENCH_NOISY_CONNECTIONS', 40),
};
const runId = randomBytes(4).toString('hex');
const database = benchDatabase(`connect_bench_reads_${runId}`);
const log = (line: string) => process.stderr.write(`bench:reads: ${line}\n`);

type Tenant = { tenantId: string; clients: Record<string, { clientId: string; apiKey: string }> };
type Answer = { status: number; ms: number };

async function timed(send: () => Promise<Response>): Promise<Answer> {
  const started = performance.now();
  const res = await send();
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

const statuses = (answers: Answer[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
};
const figures = (answers: Answer[]) => percentiles(answers.map((a) => a.ms));
const show = (p: Percentiles) => `p50 ${round(p.p50)} ms, p99 ${round(p.p99)} ms`;

async function startGateway(env: NodeJS.ProcessEnv, label: string): Promise<{ child: Child; base: string }> {
  const child = spawnTsx('src/gateway/server.ts', { ...env, HOST: '127.0.0.1', PORT: '0' }, label, [
    ...benchGatewayNodeFlags(),
  ]);
  const base = (await child.waitFor(/gateway: listening on ([^\s"]+)/))[1]!;
  return { child, base };
}

/** The list's requests one at a time: what one page costs at 1M jobs. */
async function listFigures(base: string, apiKey: string, deepCursor: string, jobId: string) {
  const headers = { authorization: `Bearer ${apiKey}` };
  const paths: Record<string, string> = {
    'first page': '/api/v1/import-jobs',
    'status=Failed': '/api/v1/import-jobs?status=Failed',
    'status=Queued (matches none)': '/api/v1/import-jobs?status=Queued',
    'sourceSystem=erp-1': '/api/v1/import-jobs?sourceSystem=erp-1',
    'sourceSystem + status': '/api/v1/import-jobs?sourceSystem=erp-1&status=CompletedWithErrors',
    'cursor page, half-way into the history': `/api/v1/import-jobs?cursor=${deepCursor}`,
    'deepest offset page (skip=10000)': '/api/v1/import-jobs?skip=10000',
    'one import job': `/api/v1/import-jobs/${jobId}`,
  };
  const result: Record<string, { statuses: Record<string, number> } & Percentiles> = {};
  for (const [name, path] of Object.entries(paths)) {
    for (let i = 0; i < 20; i++) await timed(() => fetch(base + path, { headers })); // warm-up: JIT, caches
    const answers: Answer[] = [];
    for (let i = 0; i < opts.requests; i++) answers.push(await timed(() => fetch(base + path, { headers })));
    result[name] = { ...figures(answers), statuses: statuses(answers) };
  }
  return result;
}

/** The statement the list ran before issue 49, on PostgreSQL alone: count(*) of the history + OFFSET. */
async function listBefore(pool: ReturnType<typeof createPool>, clientId: string) {
  const before = (skip: number) =>
    `SELECT (SELECT count(*)::int FROM import_jobs WHERE client_id = $1) AS total, page.*
       FROM (SELECT) one
       LEFT JOIN LATERAL (SELECT * FROM import_jobs WHERE client_id = $1 ORDER BY id DESC OFFSET ${skip} LIMIT 50) page ON true`;
  const result: Record<string, Percentiles> = {};
  for (const [name, skip] of [
    ['first page', 0],
    ['skip=999900', 999_900],
  ] as const) {
    const ms: number[] = [];
    for (let i = 0; i < Math.min(opts.requests, 30); i++) {
      const started = performance.now();
      await pool.query(before(skip), [clientId]);
      ms.push(performance.now() - started);
    }
    result[name] = percentiles(ms);
  }
  return result;
}

/** Another tenant's round: its list, its webhook endpoints, one target pushed. */
function victimRounds(base: string, apiKey: string) {
  const headers = { authorization: `Bearer ${apiKey}` };
  let n = 0;
  return async (seconds: number): Promise<Answer[]> => {
    const answers: Answer[] = [];
    const until = Date.now() + seconds * 1000;
    while (Date.now() < until) {
      answers.push(await timed(() => fetch(`${base}/api/v1/import-jobs?take=5`, { headers })));
      answers.push(await timed(() => fetch(`${base}/api/v1/webhook-endpoints`, { headers })));
      answers.push(
        await timed(() =>
          fetch(`${base}/api/v1/inbound/targets`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ sourceSystem: 'quiet', ...makeTargets(1, `q${runId}-${n++}`)[0] }),
          }),
        ),
      );
    }
    return answers;
  };
}

/** The measured client's deepest reads on many connections, from a process of their own, while `during` runs. */
async function noisyBeside<T>(base: string, apiKey: string, deepCursor: string, during: () => Promise<T>) {
  const reads = [
    '/api/v1/import-jobs?skip=10000&take=200',
    '/api/v1/import-jobs?sourceSystem=erp-2&status=Failed&skip=10000&take=200',
    `/api/v1/import-jobs?cursor=${deepCursor}&take=200`,
    '/api/v1/import-jobs?take=200',
  ];
  const load = spawnTsx(
    'bench/lib/read-load.ts',
    {
      ...process.env,
      BASE: base,
      API_KEY: apiKey,
      PATHS: JSON.stringify(reads),
      CONNECTIONS: String(opts.noisyConnections),
      SECONDS: String(opts.phaseSeconds + 2),
    },
    'read-load',
  );
  await load.waitFor(/started/);
  await new Promise((r) => setTimeout(r, 1000)); // every lane under way
  const result = await during();
  const noisy = JSON.parse((await load.waitFor(new RegExp(`${resultPrefix}(.*)`), 60_000))[1]!) as Percentiles & {
    statuses: Record<string, number>;
    perSecond: number;
  };
  await load.exited;
  return { result, noisy };
}

async function fairness(base: string, noisyKey: string, victimKey: string, deepCursor: string) {
  const victim = victimRounds(base, victimKey);
  await victim(2); // warm-up
  const quiet = await victim(opts.phaseSeconds);
  const { result: beside, noisy } = await noisyBeside(base, noisyKey, deepCursor, () => victim(opts.phaseSeconds));
  const q = figures(quiet);
  const b = figures(beside);
  return {
    quiet: { ...q, statuses: statuses(quiet) },
    beside: { ...b, statuses: statuses(beside) },
    p99Ratio: round(b.p99 / q.p99, 2),
    noisy,
  };
}

async function run() {
  const loadAtStart = loadavg().map((n) => round(n, 2));
  execFileSync(join(repoRoot, 'scripts/kafka'), ['up'], { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot });
  await ensureDatabase(database.url);
  await migrateUp(database.url);
  const pool = createPool(database.url, 4, 'bench-reads');
  const gateways: Child[] = [];
  try {
    const tenant = async (name: string) => (await demo.run({ pool, warn: () => undefined }, { name })) as Tenant;
    const noisy = await tenant('history');
    const victim = await tenant('quiet');
    const noisyClient = { tenantId: noisy.tenantId, clientId: noisy.clients.all!.clientId };
    log(`filling: ${opts.jobs} import jobs of one client, ${opts.otherTenants} × ${opts.otherJobs} of other tenants`);
    let fillMs = 0;
    for (let i = 0; i < opts.otherTenants; i++) {
      const other = await tenant(`other ${i}`);
      fillMs += (
        await fillImportJobHistory(
          pool,
          { tenantId: other.tenantId, clientId: other.clients.all!.clientId },
          opts.otherJobs,
        )
      ).ms;
    }
    fillMs += (await fillImportJobHistory(pool, noisyClient, opts.jobs)).ms;
    const newer = await tenant('newer');
    fillMs += (
      await fillImportJobHistory(
        pool,
        { tenantId: newer.tenantId, clientId: newer.clients.all!.clientId },
        opts.newerJobs,
      )
    ).ms;
    await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
    // The fill's gigabyte written out now, not by a checkpoint during the measurements (a year-old
    // database is in a steady state; a fresh fill is not).
    await pool.query('CHECKPOINT');
    const sizes = (
      await pool.query(
        `SELECT pg_size_pretty(pg_table_size('import_jobs')) AS "table", pg_size_pretty(pg_indexes_size('import_jobs')) AS indexes,
                (SELECT count(*) FROM import_jobs)::int AS rows`,
      )
    ).rows[0];
    log(`filled in ${round(fillMs / 1000)} s: import_jobs ${JSON.stringify(sizes)}`);
    // A cursor half-way into the measured client's history (the opaque form the API hands out).
    const middle = (
      await pool.query(`SELECT id FROM import_jobs WHERE client_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1`, [
        noisyClient.clientId,
        Math.floor(opts.jobs / 2),
      ])
    ).rows[0].id;
    const deepCursor = Buffer.from(`import-jobs:${middle}`).toString('base64url');
    const env = capacityEnv(database.url, `bench-reads-${runId}.`);

    const withShares = await startGateway(env, 'gateway');
    gateways.push(withShares.child);
    log('lists, one request at a time');
    const lists = await listFigures(withShares.base, noisy.clients.all!.apiKey, deepCursor, middle);
    const before = await listBefore(pool, noisyClient.clientId);
    log('fairness with tenant shares');
    const shared = await fairness(withShares.base, noisy.clients.all!.apiKey, victim.clients.all!.apiKey, deepCursor);
    await withShares.child.stop();

    const firstCome = await startGateway(
      { ...env, DATABASE_TENANT_SHARE_PERCENT: '100', DATABASE_TENANT_QUEUE: '10000' },
      'gateway-no-shares',
    );
    gateways.push(firstCome.child);
    log('fairness without tenant shares (first come, first served)');
    const unshared = await fairness(firstCome.base, noisy.clients.all!.apiKey, victim.clients.all!.apiKey, deepCursor);
    await firstCome.child.stop();

    // The case: the noisy client inside its own rate limit (the default), shares as configured.
    await pool.query('UPDATE integration_clients SET rate_limit_per_minute = NULL WHERE id = $1', [
      noisyClient.clientId,
    ]);
    const rateLimited = await startGateway(env, 'gateway-rate-limited');
    gateways.push(rateLimited.child);
    log('fairness with tenant shares, the noisy client at its default rate limit');
    const limited = await fairness(rateLimited.base, noisy.clients.all!.apiKey, victim.clients.all!.apiKey, deepCursor);
    await rateLimited.child.stop();

    const lines = [
      `bench:reads (${opts.jobs} import jobs of one client, ${opts.otherTenants * opts.otherJobs} of ${opts.otherTenants} other tenants, ${opts.newerJobs} newer ones of another; filled in ${round(fillMs / 1000)} s; import_jobs ${sizes.table} + ${sizes.indexes} indexes)`,
      'GET /api/v1/import-jobs of the client with the history, one request at a time (aim: p99 ≤ 50 ms):',
      ...Object.entries(lists).map(([name, f]) => `  ${name.padEnd(42)} ${show(f)}  ${JSON.stringify(f.statuses)}`),
      'the same list before issue 49 (count(*) + OFFSET), on PostgreSQL alone:',
      ...Object.entries(before).map(([name, f]) => `  ${name.padEnd(42)} ${show(f)}`),
      `another tenant's reads and writes beside ${opts.noisyConnections} connections of the deepest reads (aim: all 2xx, p99 ≤ 2× quiet):`,
      ...(
        [
          ['with tenant shares', shared],
          ['without (first come, first served)', unshared],
          ['shares, noisy at its rate limit', limited],
        ] as const
      ).map(
        ([name, f]) =>
          `  ${name.padEnd(36)} quiet ${show(f.quiet)}; beside ${show(f.beside)} ${JSON.stringify(f.beside.statuses)}; ` +
          `p99 ${f.p99Ratio}× quiet; the noisy client ${f.noisy.perSecond}/s ${JSON.stringify(f.noisy.statuses)}`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const result = {
      benchmark: 'reads',
      runAt: new Date().toISOString(),
      runId,
      loadAtStart,
      options: opts,
      fillMs: round(fillMs),
      importJobsSize: sizes,
      lists,
      listBefore: before,
      fairness: { withShares: shared, withoutShares: unshared, atDefaultRateLimit: limited },
    };
    const dir = join(repoRoot, 'bench/results');
    mkdirSync(dir, { recursive: true });
    const json = `${JSON.stringify(result, null, 2)}\n`;
    writeFileSync(join(dir, `reads-${result.runAt.replace(/[:.]/g, '-')}.json`), json);
    writeFileSync(join(dir, 'reads-latest.json'), json);
  } finally {
    await Promise.all(gateways.map((g) => g.stop()));
    await pool.end();
    await database.drop(log);
  }
}

await run();
