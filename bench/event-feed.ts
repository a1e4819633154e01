// `npm run bench:events`: the event feed (GET /api/v1/events) against bare baselines measured in
// the same run: how fast one client reads it (events/s) beside a plain keyset SELECT of the same
// rows, and how long a long-poll takes from an event's COMMIT to its answer beside a bare LISTEN
// connection's notification. Needs PostgreSQL and Kafka (npm start or scripts/stack up --infra).
// Prints figures; asserts nothing.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { demo } from '../src/admin/commands/demo.js';
import { startGateway } from '../src/gateway/gateway.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool, inTransaction } from '../src/shared/db/pool.js';
import { createLogger } from '../src/shared/logger.js';
import { newWebhookEventId, recordWebhookEvent } from '../src/shared/webhooks/outbox.js';
import { fieldJobData } from '../test/support/events.js';
import { percentiles } from './lib/stats.js';

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const dbName = `connect_bench_${randomBytes(4).toString('hex')}`;
const url = new URL(serverUrl);
url.pathname = `/${dbName}`;
const databaseUrl = url.toString();
const events = Number(process.env.BENCH_EVENTS ?? 50_000);
const samples = Number(process.env.BENCH_WAIT_SAMPLES ?? 200);
const pageSize = 1000;

const fmt = (n: number) => n.toFixed(1).padStart(8);
const ratePer = (count: number, ms: number) => (count / ms) * 1000;

await ensureDatabase(databaseUrl);
await migrateUp(databaseUrl);
const pool = createPool(databaseUrl, 10, 'bench');
try {
  const tenant = (await demo.run({ pool, warn: () => undefined }, { name: 'bench' })) as {
    tenantId: string;
    clients: Record<string, { apiKey: string; clientId: string }>;
  };
  await pool.query('UPDATE integration_clients SET rate_limit_per_minute = 100000000');
  const owner = { tenantId: tenant.tenantId, clientId: tenant.clients.all!.clientId };
  const data = fieldJobData;

  // The events, written set-based (the feed reads what the workers' recordWebhookEvent writes).
  for (let from = 0; from < events; from += 5000) {
    const rows = Array.from({ length: Math.min(5000, events - from) }, (_, i) => {
      const id = newWebhookEventId();
      const body = JSON.stringify({
        id,
        type: 'field_job.created',
        version: 1,
        timestamp: new Date().toISOString(),
        ...owner,
        data: data(from + i),
      });
      return { id, body };
    });
    await pool.query(
      `INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body)
       SELECT id, $1, $2, 'field_job.created', 1, body FROM unnest($3::text[], $4::text[]) AS t(id, body)`,
      [owner.tenantId, owner.clientId, rows.map((r) => r.id), rows.map((r) => r.body)],
    );
  }

  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' });
  const gateway = await startGateway(config, createLogger('silent', 'bench'));
  const headers = { authorization: `Bearer ${tenant.clients.all!.apiKey}` };
  const page = async (after: string | null, wait = 0) => {
    const query = new URLSearchParams({ limit: String(pageSize), wait: String(wait), ...(after ? { after } : {}) });
    const res = await fetch(`${gateway.url}/api/v1/events?${query}`, { headers });
    if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as { events: unknown[]; next: string; hasMore: boolean };
  };
  const readAll = async () => {
    const started = performance.now();
    let after: string | null = null;
    let count = 0;
    for (;;) {
      const p = await page(after);
      count += p.events.length;
      after = p.next;
      if (!p.hasMore) return { count, ms: performance.now() - started, cursor: after };
    }
  };
  const bare = async () => {
    const started = performance.now();
    let after = '0';
    let count = 0;
    for (;;) {
      const { rows } = await pool.query<{ feed_seq: string; body: string }>(
        'SELECT feed_seq, body FROM webhook_events WHERE client_id = $1 AND feed_seq > $2 ORDER BY feed_seq LIMIT $3',
        [owner.clientId, after, pageSize],
      );
      count += rows.length;
      for (const r of rows) JSON.parse(r.body); // what a client does with each event
      if (rows.length < pageSize) return { count, ms: performance.now() - started };
      after = rows.at(-1)!.feed_seq;
    }
  };

  console.log(`Reading ${events} events, pages of ${pageSize}, one client`);
  const first = await readAll(); // numbers the backlog on the way (sequencing)
  const feedRuns = [await readAll(), await readAll(), await readAll()];
  const bareRuns = [await bare(), await bare(), await bare()];
  const median = (runs: { count: number; ms: number }[]) =>
    [...runs].sort((a, b) => ratePer(b.count, b.ms) - ratePer(a.count, a.ms))[1]!;
  const feedRate = ratePer(median(feedRuns).count, median(feedRuns).ms);
  const bareRate = ratePer(median(bareRuns).count, median(bareRuns).ms);
  console.log(`  GET /api/v1/events, first read (numbers the backlog) ${fmt(ratePer(first.count, first.ms))} events/s`);
  console.log(`  GET /api/v1/events (median of 3)                     ${fmt(feedRate)} events/s`);
  console.log(`  bare keyset SELECT + JSON.parse (median of 3)        ${fmt(bareRate)} events/s (baseline)`);
  console.log(
    `  feed / baseline: ${(feedRate / bareRate).toFixed(2)}; target ≥ 5000 events/s: ${feedRate >= 5000 ? 'met' : 'NOT met'}`,
  );

  // Latency from COMMIT to answer: a long-poll waits at the end of the feed, one event commits.
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  await listener.query('LISTEN webhook_event');
  let notified: (() => void) | null = null;
  listener.on('notification', () => notified?.());
  const feedLatency: number[] = [];
  const bareLatency: number[] = [];
  let cursor = first.cursor;
  for (let i = 0; i < samples; i++) {
    const waiting = page(cursor, 30).then((p) => ({ p, at: performance.now() }));
    const heard = new Promise<number>((resolve) => (notified = () => resolve(performance.now())));
    await new Promise((r) => setTimeout(r, 20)); // the long-poll is waiting by now (else it reads the event at once)
    await inTransaction(pool, (tx) =>
      recordWebhookEvent(tx, { ...owner, type: 'field_job.created', data: data(events + i) }),
    );
    const committedAt = performance.now(); // COMMIT answered
    const answer = await waiting;
    if (answer.p.events.length !== 1) throw new Error(`expected one event, got ${answer.p.events.length}`);
    cursor = answer.p.next;
    feedLatency.push(answer.at - committedAt);
    bareLatency.push((await heard) - committedAt);
  }
  await listener.end();
  const f = percentiles(feedLatency);
  const b = percentiles(bareLatency);
  console.log(`\nLong-poll (wait=30), ${samples} events, commit → answer`);
  console.log(`  GET /api/v1/events?wait     p50 ${fmt(f.p50)} ms  p99 ${fmt(f.p99)} ms  max ${fmt(f.max)} ms`);
  console.log(
    `  bare LISTEN notification    p50 ${fmt(b.p50)} ms  p99 ${fmt(b.p99)} ms  max ${fmt(b.max)} ms (baseline)`,
  );
  console.log(`  target p99 ≤ 100 ms: ${f.p99 <= 100 ? 'met' : 'NOT met'}`);
  await gateway.stop();
} finally {
  await pool.end();
  const maintenance = new URL(serverUrl);
  maintenance.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
