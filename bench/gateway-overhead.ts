// `npm run bench`: what the gateway's cross-cutting layer costs per request, against bare
// baselines measured in the same run on the same machine. Needs the local stack (npm start
// or scripts/stack up --infra). Prints figures and ratios; asserts nothing.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { startGateway } from '../src/gateway/gateway.js';
import { createRateLimiter } from '../src/gateway/rate-limit/rate-limiter.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool } from '../src/shared/db/pool.js';
import { createLogger } from '../src/shared/logger.js';
import { startTracing } from '../src/shared/tracing/tracing.js';

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const dbName = `connect_bench_${randomBytes(4).toString('hex')}`;
const url = new URL(serverUrl);
url.pathname = `/${dbName}`;
const databaseUrl = url.toString();

type Stats = { ops: number; seconds: number; p50: number; p99: number };

async function measure(count: number, concurrency: number, op: () => Promise<unknown>): Promise<Stats> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) {
        const t = performance.now();
        await op();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { ops: count / seconds, seconds, p50: at(0.5), p99: at(0.99) };
}

const row = (name: string, s: Stats, base?: Stats) =>
  `${name.padEnd(46)} ${s.ops.toFixed(0).padStart(8)} /s  p50 ${s.p50.toFixed(2).padStart(6)} ms  p99 ${s.p99
    .toFixed(2)
    .padStart(6)} ms${base ? `  ×${(base.ops / s.ops).toFixed(2)} cost vs baseline` : '  (baseline)'}`;

await ensureDatabase(databaseUrl);
await migrateUp(databaseUrl);
const pool = createPool(databaseUrl, 10, 'bench');
try {
  const tenant = (await demo.run({ pool, warn: () => undefined }, { name: 'bench' })) as {
    clients: Record<string, { apiKey: string; clientId: string }>;
  };
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
  // An import job of the reading client, as the gateway records one (no Kafka needed to read it).
  const caller = tenant.clients.all!;
  const importJobId = (
    await pool.query<{ id: string }>(
      `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, request_hash, received_count,
                                accepted_count, rejected_count, chunk_count)
       SELECT tenant_id, id, 'Single', 'bench', '\\x00', 1, 1, 0, 1 FROM integration_clients WHERE id = $1
       RETURNING id`,
      [caller.clientId],
    )
  ).rows[0]!.id;

  console.log('Rate limiter alone (PostgreSQL-backed, rate-limiter-flexible), 4000 ops, 16 concurrent');
  const limiter = createRateLimiter(pool);
  const selectOne = await measure(4000, 16, () => pool.query('SELECT 1'));
  const consume = await measure(4000, 16, () => limiter('bench-client', 100_000_000));
  console.log(row('SELECT 1 on the same pool', selectOne));
  console.log(row('rate limit consume()', consume, selectOne));

  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' });
  const gateway = await startGateway(config, createLogger('silent', 'bench'));
  const key = tenant.clients.all!.apiKey;
  const get = (path: string, auth = true) =>
    fetch(`${gateway.url}${path}`, { headers: auth ? { authorization: `Bearer ${key}` } : {} }).then((r) =>
      r.arrayBuffer(),
    );
  await measure(500, 8, () => get('/livez', false)); // warm-up
  console.log('\nHTTP through the gateway, 4000 requests, 16 concurrent');
  const livez = await measure(4000, 16, () => get('/livez', false));
  const items = await measure(4000, 16, () => get('/api/v1/connect/inventory/items'));
  const balances = await measure(4000, 16, () => get('/api/v1/connect/inventory/balances'));
  const importJob = await measure(4000, 16, () => get(`/api/v1/import-jobs/${importJobId}`));
  console.log(row('GET /livez (pipeline without auth/limit/SQL)', livez));
  console.log(row('GET inventory/items (auth + limit + query)', items, livez));
  console.log(row('GET inventory/balances', balances, livez));
  console.log(row('GET import-jobs/{id}', importJob, livez));
  console.log(
    `authenticated reads vs /livez: items ${(items.ops / livez.ops).toFixed(2)}, balances ` +
      `${(balances.ops / livez.ops).toFixed(2)}, import job ${(importJob.ops / livez.ops).toFixed(2)} (aim ≥ 0.6)`,
  );
  console.log(
    `\nrate limiter share of an authenticated read: ~${((1000 / consume.ops / (1000 / items.ops)) * 100).toFixed(0)}% of its time ` +
      `(${(1000 / consume.ops).toFixed(3)} ms of ${(1000 / items.ops).toFixed(3)} ms per request at this concurrency)`,
  );

  // Tracing as the service runs it (spans always made, exported only when OTEL_* says so)
  // against the same reads with no tracer provider at all. Not alternated: once registered, the
  // gateway's tracer keeps the provider (OpenTelemetry's proxy caches its delegate).
  console.log('\nTracing (spans made, not exported) vs none, GET inventory/items, 4000 requests, 16 concurrent');
  const withoutTracing: Stats[] = [];
  for (let round = 0; round < 3; round++) {
    withoutTracing.push(await measure(4000, 16, () => get('/api/v1/connect/inventory/items')));
  }
  const tracing = startTracing('bench', { env: {} });
  const withTracing: Stats[] = [];
  for (let round = 0; round < 3; round++) {
    withTracing.push(await measure(4000, 16, () => get('/api/v1/connect/inventory/items')));
  }
  await tracing.shutdown();
  const median = (runs: Stats[]) => [...runs].sort((a, b) => a.ops - b.ops)[1]!;
  console.log(row('without a tracer provider (median of 3)', median(withoutTracing)));
  console.log(row('with tracing, nothing exported (median of 3)', median(withTracing), median(withoutTracing)));
  await gateway.stop();
} finally {
  await pool.end();
  const maintenance = new URL(serverUrl);
  maintenance.pathname = '/postgres'; // DATABASE_URL's own database need not exist
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
