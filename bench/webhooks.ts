// `npm run bench:webhooks`: webhooks that other tenants cannot slow (issues 39 and 50). The real
// dispatcher (src/workers/runner.ts, WORKERS=webhooks, its webhook settings at their defaults) runs
// as BENCH_DISPATCHERS (2) processes of their own on a throwaway database, their WEBHOOK_LANE
// alternately answering and not-answering as deploy/k8s runs them (BENCH_LANES=all: each process
// takes all deliveries, the setting's default); the receivers run in two others
// (bench/lib/webhook-receivers.ts: the healthy one apart from the noisy ones), so neither this
// process's event loop nor the noise skews when a delivery is seen to arrive. Healthy tenants
// (BENCH_HEALTHY_TENANTS, 4; one client each with two endpoints on one fast receiver) are
// measured, after a warm-up (20 single deliveries and three bursts, not counted), in these phases
// (BENCH_PHASES, comma-separated, in this order; default quiet,outage,quietAgain,sender):
//
//   quiet       nothing else queued: the bare baseline.
//   probe       a noisy tenant's 19 endpoints × 2 events = 38 deliveries queued before each
//               measurement: a third each slow (answers after 12 s, past the 10 s timeout), failing
//               (500 at once) and black holes (accept the connection, never answer), on one client.
//   tenfold     the same at 10×: 200 endpoints (ten clients of 20) × 10 events = 2,000 deliveries.
//   outage      issue 50: BENCH_OUTAGE_TENANTS (50) noisy tenants × 20 endpoints, a third each
//               slow, failing and black holes, × 2 events = 2,000 deliveries, queued before each
//               measurement: more hanging requests than the dispatchers have slots.
//   quietAgain  nothing else queued again, after the noise: drift of the machine and the database.
//   sender      (c) the last burst's deliveries sent by a bare keep-alive sender (the dispatcher's
//               own POST and signing, no PostgreSQL), at most WEBHOOK_ENDPOINT_CONCURRENCY per
//               endpoint as the dispatchers send them, its rounds alternated with the
//               dispatchers' burst rounds: the median pair's dispatchers ÷ bare (goal ≥ 0.5).
//
// Each phase: latency: (the noise queued and taken up by the dispatcher, then) BENCH_LATENCY_EVENTS
// (400) healthy events raised one at a time every BENCH_LATENCY_INTERVAL_MS (50), each timed from
// its commit to its arrival at the receiver (matched by the webhook-id header), two deliveries per
// event: 800, so that a p99 is not one hiccup's (with 400, the outage's p99 ÷ quiet's spread
// 1.1-2.3× from run to run); then throughput: (the same noise queued again, then)
// BENCH_BURST_ROUNDS (5) rounds of BENCH_BURST_DELIVERIES (500) healthy deliveries committed at
// once, each timed from the commit to the last one received (the median round counts;
// first-to-last received is printed too: it leaves out the wait for the dispatcher's next poll).
// Meanwhile: the dispatcher's CPU and peak memory (VmHWM, reset per phase where Linux allows), its
// PostgreSQL backends' CPU (by application_name) and the database's commits. After a noisy phase
// its endpoints are disabled and the bench waits until none of its attempts is in flight, so no
// noise leaks into the next phase.
//
// Latency is also timed from the commit to the start of each delivery's first attempt (the
// dispatcher's webhook_attempts.started_at), and set beside an earlier run's (BENCH_BEFORE=<its
// JSON>, e.g. of the tree before a change on the same machine): issue 50's goal, quiet p50 ≤ 50 ms
// and p99 ≤ 250 ms once the dispatcher is woken by the event's NOTIFY instead of its 1 s poll.
//
// Beside each phase's latency events, the least a dispatcher must do (bench/lib/bare-dispatcher.ts,
// a process of its own: woken by NOTIFY, a claim's round trips, signing, the keep-alive POST; no
// logic of ours) is timed the same way, a probe after each event: its p99 against its own in quiet
// is what the phase's noise does to the machine (CPU, PostgreSQL) rather than to the dispatchers.
//
// Also: each dispatcher's event-loop delay in the phase (its metrics' nodejs_eventloop_lag_*,
// reset at the phase's start: the worst p99 and max); the most requests open at the receivers at once (healthy and noisy, counted exactly)
// against the dispatchers' slots together, and each dispatcher's peak sockets (/proc/<pid>/fd).
//
// Prints a table and the goals (a healthy tenant's p99 within 2× of quiet and under 2 s, under
// 1 s in the outage; throughput within 10 % of quiet; never more requests open than the slots;
// the burst ≥ 0.5× the bare sender's), writes bench/results/webhooks-<time>.json and -latest.json.
// Asserts nothing: a missed goal is printed, never an exit code. Needs PostgreSQL on this machine
// (DATABASE_URL's server; backends' CPU is read from /proc). Kafka is not needed.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { clientCreate } from '../src/admin/commands/client.js';
import { tenantCreate } from '../src/admin/commands/tenant.js';
import { loadConfig } from '../src/shared/config.js';
import { ensureDatabase, migrateUp } from '../src/shared/db/migrate.js';
import { createPool, inTransaction, type Pool } from '../src/shared/db/pool.js';
import { createEndpoint } from '../src/shared/webhooks/endpoints.js';
import { signWebhook } from '../src/shared/webhooks/signing.js';
import { createWebhookAgents, postWebhook } from '../src/workers/webhooks/post.js';
import { recordTestEventIn } from '../test/support/events.js';
import { admin } from '../test/support/fixtures.js';
import { watchBackends, type BackendLoad } from './lib/pg-backends.js';
import { watchPeaks, type PeakRss } from './lib/peaks.js';
import {
  cpuSeconds,
  machineCores,
  machineFacts,
  phaseCpu,
  readMemory,
  runBench,
  spawnTsx,
  type Child,
  type PhaseCpu,
} from './lib/processes.js';
import { percentiles, round, type Percentiles } from './lib/stats.js';
import { envInt } from './lib/env.js';

const allPhases = ['quiet', 'probe', 'tenfold', 'outage', 'quietAgain', 'sender'] as const;
type PhaseName = Exclude<(typeof allPhases)[number], 'sender'>;
const defaultPhases = ['quiet', 'outage', 'quietAgain', 'sender'];
const opts = {
  healthyTenants: envInt('BENCH_HEALTHY_TENANTS', 4),
  healthyEndpointsPerTenant: 2,
  burstDeliveries: envInt('BENCH_BURST_DELIVERIES', 500),
  burstRounds: envInt('BENCH_BURST_ROUNDS', 5),
  latencyEvents: envInt('BENCH_LATENCY_EVENTS', 400),
  latencyIntervalMs: envInt('BENCH_LATENCY_INTERVAL_MS', 50),
  slowAnswerMs: 12_000,
  dispatchers: envInt('BENCH_DISPATCHERS', 2),
  outageTenants: envInt('BENCH_OUTAGE_TENANTS', 50),
  /** `split` (as deploy/k8s runs them): the dispatchers alternate WEBHOOK_LANE answering and not-answering; `all`: each takes all. */
  lanes: process.env.BENCH_LANES === 'all' ? ('all' as const) : ('split' as const),
  phases: (process.env.BENCH_PHASES ?? defaultPhases.join(',')).split(',').filter(Boolean),
};
for (const p of opts.phases)
  if (!(allPhases as readonly string[]).includes(p))
    throw new Error(`BENCH_PHASES: unknown phase ${p} (known: ${allPhases.join(', ')})`);
const measuredPhases = opts.phases.filter((p): p is PhaseName => p !== 'sender');
/** Noise: `tenants` noisy tenants of `endpoints` endpoints each (20 per client), each endpoint sent `events` deliveries. */
const scales: Partial<Record<PhaseName, { tenants: number; endpoints: number; events: number }>> = {
  probe: { tenants: 1, endpoints: 19, events: 2 },
  tenfold: { tenants: 1, endpoints: 200, events: 10 },
  outage: { tenants: opts.outageTenants, endpoints: 20, events: 2 },
};
const noiseKinds = ['slow', 'failing', 'blackHole'] as const;
type NoiseKind = (typeof noiseKinds)[number];
/** Cores used by processes not of this bench (this bench needs no Kafka: a JVM is someone else's). */
const othersCores = (c: PhaseCpu) => round(c.otherCores + c.brokerCores, 2);
const goals = { p99Ratio: 2, p99Ms: 2000, throughputLossPercent: 10 };
/** Issue 50's outage: a healthy tenant's p99 under 1 s (and within 2× of quiet, throughput ≥ 90 % of it as above). */
const outageP99Ms = 1000;
/** Bursts before the first phase, not counted (JIT, caches). */
const warmUpBursts = 3;
/** Issue 50: the dispatchers' throughput to one fast receiver at least this share of a bare keep-alive sender's. */
const bareRatioGoal = 0.5;
const p99GoalMs = (phase: PhaseName) => (phase === 'outage' ? outageP99Ms : goals.p99Ms);
/** Issue 50: a quiet delivery's first attempt this soon after its event's commit (NOTIFY, not the poll). */
const quietGoals = { p50Ms: 50, p99Ms: 250 };

const repoRoot = new URL('..', import.meta.url).pathname;
const runId = randomBytes(4).toString('hex');
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/connect';
const dbName = `connect_bench_webhooks_${runId}`;
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/${dbName}`;
const databaseUrl = dbUrl.toString();
const maintenanceUrl = new URL(serverUrl);
maintenanceUrl.pathname = '/postgres';
/** The dispatcher as `npm run workers` runs it, WORKERS=webhooks; webhook settings from the environment (defaults). */
const dispatcherEnv: NodeJS.ProcessEnv = {
  ...process.env,
  DATABASE_URL: databaseUrl,
  WORKERS: 'webhooks',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', // the receivers are on 127.0.0.1
  WORKER_HTTP_HOST: '127.0.0.1',
  WORKER_HTTP_PORT: '0',
  WORKER_HEARTBEAT_FILE: '',
  LOG_LEVEL: process.env.LOG_LEVEL || 'warn',
};
const webhookSettings = loadConfig(dispatcherEnv).webhooks;
const dispatcherApplicationName = 'connect-workers'; // src/workers/start-workers.ts createWorkerPool

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Epoch ms, sub-millisecond: the receivers' clock too. */
const now = () => performance.timeOrigin + performance.now();

type Owner = { tenantId: string; clientId: string };
type Healthy = Owner & { index: number; paths: string[] };
type Ports = Record<'healthy' | 'slow' | 'failing' | 'blackHole', number> & {
  /** The control servers of the healthy receiver's process and the noisy receivers'. */
  control: { healthy: number; noise: number };
};

let pool: Pool | null = null;
let pgAdmin: pg.Client | null = null;
const dispatchers: Child[] = [];
/** Each dispatcher's metrics URL (its ops server). */
const metricsUrls: string[] = [];
const receivers: Child[] = [];
let bareDispatcher: Child | null = null;
let ports: Ports;
/** Transactions this process committed to the bench database during a phase's window. */
let benchCommits = 0;

/** A receivers' control call: arrivals from the healthy receiver's process, the rest from the noise's. */
const control = async <T>(
  path: string,
  of: keyof Ports['control'] = path.startsWith('/arrivals') ? 'healthy' : 'noise',
) => (await (await fetch(`http://127.0.0.1:${ports.control[of]}${path}`)).json()) as T;
/**
 * The most dispatchers' requests open at the receivers since the last reset: the sum of each
 * process's peak, so at most that many were open at once (an upper bound: enough to show the cap held).
 */
const peakOpen = async (reset = false) => {
  const path = reset ? '/peak?reset=1' : '/peak';
  const [a, b] = await Promise.all([
    control<{ peak: number }>(path, 'healthy'),
    control<{ peak: number }>(path, 'noise'),
  ]);
  return a.peak + b.peak;
};

/** Healthy arrivals as the receiver recorded them: `${path} ${webhook-id}` → epoch ms. */
const arrivals = new Map<string, number>();
let arrivalsRead = 0;
async function readArrivals() {
  const rows = await control<[string, string, number][]>(`/arrivals?from=${arrivalsRead}`);
  arrivalsRead += rows.length;
  for (const [path, id, at] of rows) arrivals.set(`${path} ${id}`, at);
}
/** Waits until every key has arrived (or timeoutMs); returns how many did not. */
async function awaitArrivals(keys: string[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await readArrivals();
    const missing = keys.filter((k) => !arrivals.has(k)).length;
    if (missing === 0 || Date.now() > deadline) return missing;
    await sleep(50);
  }
}

async function dbCount(sql: string, values: unknown[]): Promise<number> {
  const { rows } = await pool!.query<{ n: number }>(sql, values);
  return rows[0]!.n;
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await sleep(250);
  }
}

let eventNumber = 0;

async function createHealthy(): Promise<Healthy[]> {
  const out: Healthy[] = [];
  for (let index = 0; index < opts.healthyTenants; index++) {
    const { tenantId } = await admin(pool!, tenantCreate, ['--name', `healthy ${index}`]);
    const { clientId } = await admin(pool!, clientCreate, ['--tenant', tenantId, '--name', `healthy ${index}`]);
    const paths: string[] = [];
    for (let e = 0; e < opts.healthyEndpointsPerTenant; e++) {
      const path = `/tenant-${index}/endpoint-${e}`;
      await createEndpoint(pool!, {
        tenantId,
        clientId,
        url: `http://127.0.0.1:${ports.healthy}${path}`,
        eventTypes: '*',
      });
      paths.push(path);
    }
    out.push({ tenantId, clientId, index, paths });
  }
  return out;
}

type Sent = { eventId: string; tenant: Healthy; committedAt: number };
type BareSent = { id: string; committedAt: number };
const bareKey = (b: BareSent) => `/bare bare-${b.id}`;
const bareBody = JSON.stringify({ type: 'bench.bare_probe', data: { note: 'x'.repeat(240) } });

/** A probe for the bare dispatcher (bench/lib/bare-dispatcher.ts): a row and its NOTIFY, one commit. */
async function sendBare(): Promise<BareSent> {
  const { rows } = await pool!.query<{ id: string }>(
    `WITH p AS (INSERT INTO bench_bare_probe (body) VALUES ($1) RETURNING id)
     SELECT id, pg_notify('bench_bare_probe', id::text) FROM p`,
    [bareBody],
  );
  benchCommits++;
  return { id: rows[0]!.id, committedAt: now() };
}
const keysOf = (s: Sent) => s.tenant.paths.map((p) => `${p} ${s.eventId}`);

/** Latencies (arrival − commit) of sent events' deliveries that arrived. */
function latenciesOf(sent: Sent[]): { all: number[]; byTenant: Map<number, number[]> } {
  const all: number[] = [];
  const byTenant = new Map<number, number[]>();
  for (const s of sent)
    for (const key of keysOf(s)) {
      const at = arrivals.get(key);
      if (at === undefined) continue;
      all.push(at - s.committedAt);
      byTenant.set(s.tenant.index, [...(byTenant.get(s.tenant.index) ?? []), at - s.committedAt]);
    }
  return { all, byTenant };
}

const rounded = (p: Percentiles): Percentiles => ({
  p50: round(p.p50),
  p95: round(p.p95),
  p99: round(p.p99),
  max: round(p.max),
});

/**
 * burstDeliveries healthy deliveries committed at once (one transaction), timed from the commit
 * to the last one received; also from the first received to the last (without the wait for the
 * dispatcher's next poll, up to WEBHOOK_POLL_INTERVAL_MS).
 */
async function burstRound(healthy: Healthy[]) {
  const events = Math.ceil(opts.burstDeliveries / opts.healthyEndpointsPerTenant);
  const ids = await inTransaction(pool!, async (tx) => {
    const out: { eventId: string; tenant: Healthy }[] = [];
    for (let i = 0; i < events; i++) {
      const tenant = healthy[i % healthy.length]!;
      out.push({ eventId: (await recordTestEventIn(tx, tenant, eventNumber++)).eventId, tenant });
    }
    return out;
  });
  const committedAt = now();
  benchCommits++;
  const sent: Sent[] = ids.map((x) => ({ ...x, committedAt }));
  const keys = sent.flatMap(keysOf);
  const missing = await awaitArrivals(keys, 120_000);
  const { all } = latenciesOf(sent);
  const received = keys.length - missing;
  const last = all.length ? Math.max(...all) : NaN; // latencies are from the commit
  const first = all.length ? Math.min(...all) : NaN;
  return {
    deliveries: keys.length,
    received,
    seconds: round(last / 1000, 3),
    deliveriesPerSecond: round(received / (last / 1000), 1),
    firstArrivalMs: round(first),
    firstToLastPerSecond: round((received - 1) / ((last - first) / 1000), 1),
    latencyMs: rounded(percentiles(all)),
  };
}

/** burstRounds rounds, one after another; the figures of the median round (by deliveries/s) and every round's rate. */
async function measureBurst(healthy: Healthy[]) {
  const rounds: Awaited<ReturnType<typeof burstRound>>[] = [];
  for (let i = 0; i < opts.burstRounds; i++) rounds.push(await burstRound(healthy));
  const byRate = [...rounds].sort((a, b) => a.deliveriesPerSecond - b.deliveriesPerSecond);
  const median = byRate[Math.floor((byRate.length - 1) / 2)]!;
  const firstToLast = [...rounds].map((r) => r.firstToLastPerSecond).sort((a, b) => a - b);
  return {
    ...median,
    missing: rounds.reduce((n, r) => n + r.deliveries - r.received, 0),
    medianFirstToLastPerSecond: firstToLast[Math.floor((firstToLast.length - 1) / 2)]!,
    rounds: rounds.map((r) => ({
      deliveriesPerSecond: r.deliveriesPerSecond,
      firstArrivalMs: r.firstArrivalMs,
      firstToLastPerSecond: r.firstToLastPerSecond,
    })),
  };
}

/**
 * latencyEvents healthy events, one at a time at a steady rate, each timed from its commit to its
 * arrival; after each, a probe of the bare dispatcher, timed the same way (the machine's share).
 */
async function measureLatency(healthy: Healthy[]) {
  const sent: Sent[] = [];
  const bare: BareSent[] = [];
  const start = performance.now();
  for (let i = 0; i < opts.latencyEvents; i++) {
    const due = start + i * opts.latencyIntervalMs;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const tenant = healthy[i % healthy.length]!;
    const { eventId } = await inTransaction(pool!, (tx) => recordTestEventIn(tx, tenant, eventNumber++));
    sent.push({ eventId, tenant, committedAt: now() });
    benchCommits++;
    bare.push(await sendBare());
  }
  const sendSeconds = (performance.now() - start) / 1000;
  const keys = sent.flatMap(keysOf);
  const missing = await awaitArrivals(keys, 60_000);
  const bareMissing = await awaitArrivals(bare.map(bareKey), 10_000);
  const bareMs = bare.flatMap((b) => {
    const at = arrivals.get(bareKey(b));
    return at === undefined ? [] : [at - b.committedAt];
  });
  const { all, byTenant } = latenciesOf(sent);
  const tenantP99 = [...byTenant.entries()].sort(([a], [b]) => a - b).map(([, v]) => round(percentiles(v).p99));
  // Event to first attempt (issue 50): from the commit to the start of each delivery's first
  // attempt as the dispatcher recorded it (started_at, its clock: the same machine's).
  const committedAt = new Map(sent.map((s) => [s.eventId, s.committedAt]));
  const { rows: firstAttempts } = await pool!.query<{ event_id: string; started_at: Date }>(
    'SELECT event_id, started_at FROM webhook_attempts WHERE event_id = ANY($1) AND attempt = 1',
    [sent.map((s) => s.eventId)],
  );
  const toFirstAttempt = firstAttempts.map((r) => r.started_at.getTime() - committedAt.get(r.event_id)!);
  return {
    events: sent.length,
    deliveries: keys.length,
    missing,
    sendSeconds: round(sendSeconds, 1),
    ms: rounded(percentiles(all)),
    firstAttemptMs: rounded(percentiles(toFirstAttempt)),
    bareMs: rounded(percentiles(bareMs)),
    bareMissing,
    tenantP99Ms: tenantP99,
    worstTenantP99Ms: Math.max(...tenantP99),
  };
}

type Noise = {
  tenantIds: string[];
  clients: Owner[];
  endpoints: { endpointId: string; kind: NoiseKind }[];
  events: number;
};

async function createNoise(
  phase: PhaseName,
  scale: { tenants: number; endpoints: number; events: number },
): Promise<Noise> {
  const tenantIds: string[] = [];
  const clients: Owner[] = [];
  const endpoints: Noise['endpoints'] = [];
  let n = 0; // kinds go round across all the noise's endpoints
  for (let t = 0; t < scale.tenants; t++) {
    const { tenantId } = await admin(pool!, tenantCreate, ['--name', `noisy ${phase} ${t}`]);
    tenantIds.push(tenantId);
    for (let k = 0; k < scale.endpoints; k++, n++) {
      if (k % 20 === 0) {
        const { clientId } = await admin(pool!, clientCreate, ['--tenant', tenantId, '--name', `noisy ${k / 20}`]);
        clients.push({ tenantId, clientId });
      }
      const kind = noiseKinds[n % noiseKinds.length]!;
      const url = `http://127.0.0.1:${ports[kind]}/${phase}/${kind}/${n}`;
      const { endpointId } = await createEndpoint(pool!, { ...clients.at(-1)!, url, eventTypes: '*' });
      endpoints.push({ endpointId, kind });
    }
  }
  return { tenantIds, clients, endpoints, events: scale.events };
}

/** Every noisy client raises `events` events (one delivery per endpoint each), in one transaction. */
async function queueNoise(noise: Noise): Promise<number> {
  const deliveries = await inTransaction(pool!, async (tx) => {
    let n = 0;
    for (const client of noise.clients)
      for (let e = 0; e < noise.events; e++) n += (await recordTestEventIn(tx, client, eventNumber++)).deliveries;
    return n;
  });
  benchCommits++;
  return deliveries;
}

type NoiseCounts = { requests: Record<NoiseKind, number>; open: Record<NoiseKind, number> };
const openNoise = (c: NoiseCounts) => c.open.slow + c.open.failing + c.open.blackHole;

/** What became of the noise (read before its endpoints are disabled). */
async function noiseOutcome(noise: Noise) {
  const { rows: attempts } = await pool!.query<{ outcome: string; n: number }>(
    'SELECT outcome, count(*)::int AS n FROM webhook_attempts WHERE tenant_id = ANY($1) GROUP BY outcome ORDER BY outcome',
    [noise.tenantIds],
  );
  const { rows: deliveries } = await pool!.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = ANY($1) GROUP BY status ORDER BY status',
    [noise.tenantIds],
  );
  const { rows: breakers } = await pool!.query<{ kind: string; opened: number; open_now: number; disabled: number }>(
    `SELECT split_part(url, '/', 5) AS kind,
            count(*) FILTER (WHERE breaker_trips > 0)::int AS opened,
            count(*) FILTER (WHERE breaker_opened_at IS NOT NULL AND breaker_probe_at > now())::int AS open_now,
            count(*) FILTER (WHERE status = 'Disabled')::int AS disabled
       FROM webhook_endpoints WHERE tenant_id = ANY($1) GROUP BY 1 ORDER BY 1`,
    [noise.tenantIds],
  );
  return {
    attempts: Object.fromEntries(attempts.map((r) => [r.outcome, r.n])),
    deliveries: Object.fromEntries(deliveries.map((r) => [r.status, r.n])),
    breakersOpenedByKind: Object.fromEntries(breakers.map((r) => [r.kind, r.opened])),
    breakersOpenNowByKind: Object.fromEntries(breakers.map((r) => [r.kind, r.open_now])),
    disabledByDispatcher: breakers.reduce((n, r) => n + r.disabled, 0),
  };
}

/** Disables the noisy endpoints and waits until none of their attempts is in flight. */
async function silence(noise: Noise) {
  // setEndpointStatus's statement, for all of them at once (the outage has 1,000), locking them in
  // id order as the dispatchers' recordings do: in the table's order it deadlocked with a
  // recording of several of them (seen once in the outage).
  await pool!.query(
    `UPDATE webhook_endpoints ep SET status = 'Disabled', disabled_reason = 'bench: phase over',
            disabled_at = coalesce(ep.disabled_at, now()), updated_at = now()
       FROM (SELECT id FROM webhook_endpoints WHERE tenant_id = ANY($1) ORDER BY id FOR NO KEY UPDATE) locked
      WHERE ep.id = locked.id`,
    [noise.tenantIds],
  );
  await waitUntil(
    'the noisy attempts in flight have ended',
    async () =>
      (await dbCount(
        `SELECT count(*)::int AS n FROM webhook_deliveries
          WHERE tenant_id = ANY($1) AND status = 'Delivering' AND lease_until >= now()`,
        [noise.tenantIds],
      )) === 0 && openNoise(await control<NoiseCounts>('/noise')) === 0,
    webhookSettings.timeoutMs + 30_000,
  );
}

type PhaseResult = {
  phase: PhaseName;
  noise: {
    endpoints: number;
    deliveries: number;
    byKind: Record<NoiseKind, number>;
    receiverRequests: Record<NoiseKind, number>;
    /** Noisy requests open at the receivers (sampled every 100 ms) while latency, then throughput, was measured. */
    inFlightAtReceivers: { latency: { avg: number; max: number }; throughput: { avg: number; max: number } };
    outcome: Awaited<ReturnType<typeof noiseOutcome>>;
  } | null;
  throughput: Awaited<ReturnType<typeof measureBurst>>;
  latency: Awaited<ReturnType<typeof measureLatency>>;
  windowSeconds: number;
  /** All dispatchers together: CPU; the largest peak RSS and socket count of any one of them. */
  dispatcher: {
    cpuSeconds: number;
    cores: number;
    peakRss: PeakRss;
    peakSockets: number;
    eventLoopDelay: { p99Ms: number; maxMs: number };
  };
  /** The most requests (healthy and noisy) open at the receivers at once, against the dispatchers' slots together. */
  peakOpenAtReceivers: number;
  postgres: BackendLoad & { benchCommits: number; dispatcherCommitsPerSecond: number };
  cpu: PhaseCpu;
};

/**
 * The dispatchers' event-loop delay since the last call (prom-client's monitorEventLoopDelay at
 * 10 ms resolution, reset at each scrape): the worst dispatcher's p99 and max, in ms. The time a
 * delivery's every step (a notification, a query's answer, a response) may wait to be handled.
 */
async function loopDelay(): Promise<{ p99Ms: number; maxMs: number }> {
  const read = async (url: string) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const gauge = (name: string) =>
      Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
    return { p99Ms: gauge('nodejs_eventloop_lag_p99_seconds'), maxMs: gauge('nodejs_eventloop_lag_max_seconds') };
  };
  const all = await Promise.all(metricsUrls.map(read));
  return {
    p99Ms: round(Math.max(...all.map((a) => a.p99Ms)), 1),
    maxMs: round(Math.max(...all.map((a) => a.maxMs)), 1),
  };
}

/** The most sockets any one of the processes had open at once (sampled every 100 ms from /proc/<pid>/fd). */
function watchSockets(pids: number[]) {
  const count = (pid: number) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:');
        } catch {
          return false; // closed meanwhile
        }
      }).length;
    } catch {
      return NaN; // not Linux, or the process is gone
    }
  };
  let peak = 0;
  const sample = () => {
    for (const pid of pids) peak = Math.max(peak, count(pid));
  };
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

async function runPhase(phase: PhaseName, healthy: Healthy[]): Promise<PhaseResult> {
  const scale = scales[phase];
  const healthyIds = healthy.map((h) => h.tenantId);
  await waitUntil(
    'the healthy queue is empty',
    async () =>
      (await dbCount(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = ANY($1) AND status IN ('Pending', 'Delivering')`,
        [healthyIds],
      )) === 0,
    60_000,
  );
  // The machine's server runs with autovacuum off (a CI setting): what autovacuum would have done
  // between phases on a production server is done here, so a phase neither wades through the dead
  // rows of the one before (without it, quietAgain's throughput was 0.6-0.8× quiet's) nor plans
  // with statistics of an empty database. BENCH_ANALYZE=0 vacuums without ANALYZE: with statistics
  // taken before the outage's noise arrives, the claim's plan goes bad in it (issue 50, open:
  // docs/benchmarks.md, "Lanes apart").
  const analyze = process.env.BENCH_ANALYZE !== '0';
  await pool!.query(
    `VACUUM ${analyze ? '(ANALYZE) ' : ''}webhook_deliveries, webhook_attempts, webhook_endpoints, webhook_events`,
  );
  const noise = scale ? await createNoise(phase, scale) : null;
  log(
    `${phase}: ${noise ? `${scale!.tenants} × ${scale!.endpoints} noisy endpoints × ${scale!.events} events queued, then ` : 'nothing else queued; '}` +
      `${opts.latencyEvents} healthy events every ${opts.latencyIntervalMs} ms; ` +
      `${noise ? 'the noise queued again, then ' : ''}${opts.burstRounds} × ${opts.burstDeliveries} healthy deliveries at once`,
  );
  const noise0 = await control<NoiseCounts>('/noise');
  const cpu = phaseCpu(null, dbName);
  for (const d of dispatchers) cpu.track(d.pid);
  for (const r of receivers) cpu.track(r.pid);
  const dispatchersCpu = () => dispatchers.reduce((n, d) => n + cpuSeconds(d.pid), 0);
  const dispatcherCpu0 = dispatchersCpu();
  const peaks = watchPeaks(Object.fromEntries(dispatchers.map((d, i) => [`dispatcher${i}`, d.pid])));
  const sockets = watchSockets(dispatchers.map((d) => d.pid));
  await peakOpen(true);
  const pgLoad = await watchBackends(pgAdmin!, dbName, dispatcherApplicationName);
  await loopDelay(); // resets it: what follows is this phase's
  benchCommits = 0;
  const t0 = now();
  let deliveries = 0;
  /** Queues the noise; returns once the dispatcher has taken it up (at its next poll): slow attempts are under way. */
  const makeNoise = async () => {
    if (!noise) return;
    deliveries += await queueNoise(noise);
    const deadline = Date.now() + webhookSettings.pollIntervalMs + 3000;
    while (openNoise(await control<NoiseCounts>('/noise')) === 0 && Date.now() < deadline) await sleep(50);
    await sleep(250);
  };
  // The noise is queued afresh before each measurement: the probe's is over in about 30 s (first
  // attempts, then the retries 5 s later; the next are 5 minutes away).
  await makeNoise();
  const latencyFrom = now();
  const latency = await measureLatency(healthy);
  const latencyTo = now();
  await makeNoise();
  const throughputFrom = now();
  const throughput = await measureBurst(healthy);
  const t1 = now();
  const eventLoopDelay = await loopDelay();
  const load = await pgLoad.stop();
  const cpuUse = cpu.end([...dispatchers.map((d) => d.pid), ...receivers.map((r) => r.pid)]);
  const dispatcherCpu = dispatchersCpu() - dispatcherCpu0;
  const peakRss = Object.values(peaks.stop()).reduce((a, b) => (b.peakRssMiB > a.peakRssMiB ? b : a));
  const peakSockets = sockets.stop();
  const peakOpenAtReceivers = await peakOpen();
  const windowSeconds = (t1 - t0) / 1000;
  let noiseResult: PhaseResult['noise'] = null;
  if (noise) {
    const noise1 = await control<NoiseCounts>('/noise');
    const open = async (from: number, to: number) => {
      const o = await control<{ avg: number; max: number }>(`/open?from=${from}&to=${to}`);
      return { avg: round(o.avg, 1), max: o.max };
    };
    noiseResult = {
      endpoints: noise.endpoints.length,
      deliveries,
      byKind: Object.fromEntries(
        noiseKinds.map((k) => [k, noise.endpoints.filter((e) => e.kind === k).length]),
      ) as Record<NoiseKind, number>,
      receiverRequests: Object.fromEntries(
        noiseKinds.map((k) => [k, noise1.requests[k] - noise0.requests[k]]),
      ) as Record<NoiseKind, number>,
      inFlightAtReceivers: {
        latency: await open(latencyFrom, latencyTo),
        throughput: await open(throughputFrom, t1),
      },
      outcome: await noiseOutcome(noise),
    };
    await silence(noise);
  }
  return {
    phase,
    noise: noiseResult,
    throughput,
    latency,
    windowSeconds: round(windowSeconds, 1),
    dispatcher: {
      cpuSeconds: round(dispatcherCpu, 2),
      cores: round(dispatcherCpu / load.seconds, 2),
      peakRss,
      peakSockets,
      eventLoopDelay,
    },
    peakOpenAtReceivers,
    postgres: {
      ...load,
      benchCommits,
      dispatcherCommitsPerSecond: round((load.commits - benchCommits) / load.seconds, 1),
    },
    cpu: cpuUse,
  };
}

/**
 * (c) The same deliveries (the last burst's: bodies, endpoints, secrets) sent by a bare keep-alive
 * sender, no PostgreSQL: the dispatcher's own POST (post.ts, kept-alive agents) and signing, at
 * most WEBHOOK_ENDPOINT_CONCURRENCY in flight per endpoint, as the dispatchers send them. Its
 * rounds alternate with the dispatchers' burst rounds (BENCH_BURST_ROUNDS pairs, after a bare
 * round not counted), so both are timed as warm and on the same machine: throughput rose through a
 * run (the dispatchers' quiet rounds 0.6-0.8× their last phase's; the bare sender's 2× from its
 * first round to its last, measured cold after the phases). Each rate is start (the commit, for
 * the dispatchers) to the last answer; the ratio is the median pair's.
 */
async function measureBareSender(healthy: Healthy[]) {
  const { rows } = await pool!.query<{ id: string; body: string; url: string; secret: string }>(
    `SELECT e.id, e.body, ep.url, ep.secret FROM webhook_deliveries d
       JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
      WHERE d.tenant_id = ANY($1) ORDER BY d.id DESC LIMIT $2`,
    [healthy.map((h) => h.tenantId), opts.burstDeliveries],
  );
  log(
    `sender: ${rows.length} deliveries by a bare keep-alive sender (no PostgreSQL), ${opts.burstRounds} rounds ` +
      `alternated with the dispatchers'`,
  );
  const agents = createWebhookAgents({ allowPrivate: true });
  const byUrl = new Map<string, typeof rows>();
  for (const r of rows) byUrl.set(r.url, [...(byUrl.get(r.url) ?? []), r]);
  let failed = 0;
  const bareRound = async () => {
    const started = performance.now();
    await Promise.all(
      [...byUrl.entries()].flatMap(([url, queue]) => {
        let next = 0;
        const worker = async () => {
          while (next < queue.length) {
            const d = queue[next++]!;
            const sentAt = new Date();
            const headers = signWebhook(d.id, sentAt, d.body, [d.secret]);
            const result = await postWebhook(url, headers, d.body, {
              timeoutMs: webhookSettings.timeoutMs,
              allowPrivate: true,
              agents,
            });
            if (result.outcome !== 'Succeeded') failed++;
          }
        };
        return Array.from({ length: webhookSettings.endpointConcurrency }, worker);
      }),
    );
    return rows.length / ((performance.now() - started) / 1000);
  };
  const pairs: { dispatchers: number; bare: number }[] = [];
  try {
    await bareRound(); // its connections and code warmed, as the dispatchers' are by now
    for (let i = 0; i < opts.burstRounds; i++) {
      const d = await burstRound(healthy);
      if (d.received < d.deliveries) throw new Error(`sender: ${d.deliveries - d.received} dispatcher deliveries lost`);
      pairs.push({ dispatchers: d.deliveriesPerSecond, bare: await bareRound() });
    }
  } finally {
    agents.destroy();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  return {
    deliveries: rows.length,
    failed,
    inFlight: byUrl.size * webhookSettings.endpointConcurrency,
    deliveriesPerSecond: round(median(pairs.map((p) => p.bare)), 1),
    dispatchersPerSecond: round(median(pairs.map((p) => p.dispatchers)), 1),
    ratio: round(median(pairs.map((p) => p.dispatchers / p.bare)), 2),
    rounds: pairs.map((p) => ({ dispatchers: round(p.dispatchers, 1), bare: round(p.bare, 1) })),
  };
}

/**
 * Quiet event-to-first-attempt and event-to-arrival, before (BENCH_BEFORE: the JSON of an earlier
 * run, e.g. of the tree before a change, on the same machine) and now (issue 50's goal: quiet p50
 * ≤ 50 ms, p99 ≤ 250 ms to the first attempt).
 */
function beforeAfter(now: Awaited<ReturnType<typeof measureLatency>> | null): string[] {
  if (!now) return [];
  const goal = `goal (issue 50): quiet event→first attempt p50 ≤ ${quietGoals.p50Ms} ms, p99 ≤ ${quietGoals.p99Ms} ms`;
  const met = now.firstAttemptMs.p50 <= quietGoals.p50Ms && now.firstAttemptMs.p99 <= quietGoals.p99Ms;
  const lines = [`${goal}: ${met ? 'met' : 'NOT met'}`];
  const pair = (p: Percentiles | undefined) => (p ? `${p.p50} / ${p.p99}` : '—');
  const file = process.env.BENCH_BEFORE;
  let before: { runId: string; runAt: string; latency?: { ms?: Percentiles; firstAttemptMs?: Percentiles } } | null =
    null;
  if (file) {
    const earlier = JSON.parse(readFileSync(file, 'utf8')) as {
      runId: string;
      runAt: string;
      phases: { phase: string; latency: { ms?: Percentiles; firstAttemptMs?: Percentiles } }[];
    };
    before = { ...earlier, latency: earlier.phases.find((p) => p.phase === 'quiet')?.latency };
  }
  lines.push(
    `quiet p50 / p99 ms             ${'before'.padStart(22)}${'now'.padStart(22)}`,
    `  event → first attempt        ${pair(before?.latency?.firstAttemptMs).padStart(22)}${pair(now.firstAttemptMs).padStart(22)}`,
    `  event → arrival              ${pair(before?.latency?.ms).padStart(22)}${pair(now.ms).padStart(22)}`,
    before
      ? `  before: run ${before.runId} at ${before.runAt} (${file})`
      : "  before: — (BENCH_BEFORE=<an earlier run's JSON>)",
  );
  return lines;
}

async function run() {
  const loadAtStart = loadavg().map((n) => round(n, 2));
  log(`run ${runId}: database ${dbName}; phases ${opts.phases.join(', ')}`);
  await ensureDatabase(databaseUrl);
  await migrateUp(databaseUrl);
  pool = createPool(databaseUrl, 4, 'bench-webhooks');
  await pool.query(
    'CREATE TABLE bench_bare_probe (id bigserial PRIMARY KEY, body text NOT NULL, claimed_at timestamptz)',
  );
  pgAdmin = new pg.Client({ connectionString: maintenanceUrl.toString(), application_name: 'bench-webhooks-watch' });
  await pgAdmin.connect();

  const listening = await Promise.all(
    (['healthy', 'noise'] as const).map(async (role) => {
      const child = spawnTsx(
        'bench/lib/webhook-receivers.ts',
        { ...process.env, BENCH_SLOW_MS: String(opts.slowAnswerMs), BENCH_RECEIVERS: role },
        `receivers-${role}`,
      );
      receivers.push(child);
      return JSON.parse((await child.waitFor(/receivers: (\{.*\})/))[1]!) as Record<string, number>;
    }),
  );
  const [own, noisy] = listening as [Record<string, number>, Record<string, number>];
  ports = {
    healthy: own.healthy!,
    slow: noisy.slow!,
    failing: noisy.failing!,
    blackHole: noisy.blackHole!,
    control: { healthy: own.control!, noise: noisy.control! },
  };
  const healthy = await createHealthy();

  for (let i = 0; i < opts.dispatchers; i++) {
    const lane = opts.lanes === 'split' ? (i % 2 === 0 ? 'answering' : 'not-answering') : 'all';
    const d = spawnTsx('src/workers/runner.ts', { ...dispatcherEnv, WEBHOOK_LANE: lane }, `dispatcher${i}`);
    dispatchers.push(d);
    metricsUrls.push((await d.waitFor(/workers: metrics on (\S+?)"/, 60_000))[1]!);
    await d.waitFor(/workers: running webhooks/, 60_000);
  }
  const idleRssMiB = round(readMemory(dispatchers[0]!.pid)?.rssMiB ?? NaN, 0);
  bareDispatcher = spawnTsx(
    'bench/lib/bare-dispatcher.ts',
    {
      ...process.env,
      DATABASE_URL: databaseUrl,
      BENCH_BARE_TARGET: `http://127.0.0.1:${ports.healthy}/bare`,
      BENCH_BARE_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    },
    'bare-dispatcher',
  );
  await bareDispatcher.waitFor(/bare-dispatcher: listening/, 60_000);

  // Warm-up (JIT, the pool's connections, PostgreSQL's caches), not counted: the first phase
  // measured must not pay for it. A few single deliveries, then warmUpBursts bursts (with one, the
  // quiet phase's rounds still rose to the later phases': its throughput read 0.7-0.9× theirs).
  const warm: Sent[] = [];
  for (let i = 0; i < 20; i++) {
    const tenant = healthy[i % healthy.length]!;
    const { eventId } = await inTransaction(pool, (tx) => recordTestEventIn(tx, tenant, eventNumber++));
    warm.push({ eventId, tenant, committedAt: now() });
  }
  const warmBare: BareSent[] = [];
  for (let i = 0; i < 20; i++) warmBare.push(await sendBare());
  if ((await awaitArrivals([...warm.flatMap(keysOf), ...warmBare.map(bareKey)], 30_000)) > 0)
    throw new Error('warm-up deliveries did not arrive');
  for (let i = 0; i < warmUpBursts; i++) {
    const warmBurst = await burstRound(healthy);
    if (warmBurst.received < warmBurst.deliveries) throw new Error('warm-up burst did not arrive');
    log(`warm-up burst: ${warmBurst.deliveriesPerSecond} deliveries/s`);
  }

  const results: PhaseResult[] = [];
  for (const phase of measuredPhases) results.push(await runPhase(phase, healthy));
  const bare = opts.phases.includes('sender') ? await measureBareSender(healthy) : null;

  const base = results.find((r) => r.phase === 'quiet') ?? null;
  const evaluated = results.map((r) => {
    const p99 = r.latency.ms.p99;
    const p99Ratio = base ? round(p99 / base.latency.ms.p99, 2) : NaN;
    // The bare dispatcher's p99 against its own in quiet: what the phase does to the machine.
    const bareP99Ratio = base ? round(r.latency.bareMs.p99 / base.latency.bareMs.p99, 2) : NaN;
    const throughputRatio = base
      ? round(r.throughput.deliveriesPerSecond / base.throughput.deliveriesPerSecond, 2)
      : NaN;
    return {
      ...r,
      vsQuiet: { p99Ratio, bareP99Ratio, throughputRatio },
      goals: {
        p99WithinRatio: Number.isFinite(p99Ratio) ? p99Ratio <= goals.p99Ratio : null,
        p99UnderMs: p99 < p99GoalMs(r.phase) && r.latency.missing === 0,
        peakWithinCap: r.peakOpenAtReceivers <= webhookSettings.concurrency * opts.dispatchers,
        throughputWithin: Number.isFinite(throughputRatio)
          ? throughputRatio >= 1 - goals.throughputLossPercent / 100
          : null,
      },
    };
  });
  const dispatcherHwm = Math.max(...results.map((r) => r.dispatcher.peakRss.peakRssMiB));
  const result = {
    benchmark: 'webhooks',
    runAt: new Date().toISOString(),
    runId,
    machine: machineFacts(loadAtStart),
    options: {
      ...opts,
      scales,
      receivers: 'child processes, healthy apart from noise (bench/lib/webhook-receivers.ts)',
    },
    dispatcherSettings: webhookSettings,
    goals: { ...goals, quiet: quietGoals, outageP99Ms, bareRatio: bareRatioGoal },
    dispatcherIdleRssMiB: idleRssMiB,
    dispatcherPeakRssMiB: dispatcherHwm,
    phases: evaluated,
    bareSender: bare,
  };

  const s = webhookSettings;
  const yes = (ok: boolean | null) => (ok === null ? '—' : ok ? 'met' : 'NOT met');
  const col = (v: string | number, w: number) => ` ${String(v)}`.padStart(w); // a cell too wide still stands apart
  const head = (label: string) => label.padEnd(32);
  const cells = (f: (r: (typeof evaluated)[number]) => string | number) => evaluated.map((r) => col(f(r), 22)).join('');
  const out = [
    '',
    `webhooks (issues 39, 50): ${opts.dispatchers} dispatcher(s) of ${s.concurrency} slots` +
      `${opts.lanes === 'split' ? ', lanes split (answering / not-answering, alternately)' : ', each taking all lanes'}, ${s.reservePercent} % held back ` +
      `for endpoints that answer (slow from ${s.slowAttemptMs} ms), tenant share ${s.tenantSharePercent} % ` +
      `(${Math.max(1, Math.floor((s.concurrency * s.tenantSharePercent) / 100))} slots), ${s.endpointConcurrency} per endpoint ` +
      `(max ${s.endpointConcurrencyMax}), breaker ${s.breakerFailures} failures / ${s.breakerOpenMs} ms (max ${s.breakerOpenMaxMs}), ` +
      `timeout ${s.timeoutMs} ms, poll ${s.pollIntervalMs} ms, retries ${s.retryScheduleMs.join(',')} ms`,
    `healthy: ${opts.healthyTenants} tenants × ${opts.healthyEndpointsPerTenant} endpoints on one fast receiver; ` +
      `noise: a third each slow (answers after ${opts.slowAnswerMs} ms), failing (500), black hole; ` +
      `receivers in child processes (healthy apart from noise); ${machineCores()} cores, load ${loadAtStart.join(' ')} at start`,
    '',
    head('') + evaluated.map((r) => col(r.phase, 22)).join(''),
    head('noise endpoints × events') +
      cells((r) => (r.noise ? `${r.noise.endpoints} × ${scales[r.phase]!.events}, 2× = ${r.noise.deliveries}` : '—')),
    head('  noisy tenants') + cells((r) => (r.noise ? scales[r.phase]!.tenants : '—')),
    head('healthy latency p50 / p99 ms') + cells((r) => `${r.latency.ms.p50} / ${r.latency.ms.p99}`),
    head('  to first attempt p50 / p99 ms') +
      cells((r) => `${r.latency.firstAttemptMs.p50} / ${r.latency.firstAttemptMs.p99}`),
    head('  max ms; worst tenant p99 ms') + cells((r) => `${r.latency.ms.max}; ${r.latency.worstTenantP99Ms}`),
    head('  p99 × quiet') + cells((r) => r.vsQuiet.p99Ratio),
    head('bare dispatch p50 / p99 ms') + cells((r) => `${r.latency.bareMs.p50} / ${r.latency.bareMs.p99}`),
    head('  bare p99 × quiet') + cells((r) => r.vsQuiet.bareP99Ratio),
    head("  healthy p99 ÷ bare's") + cells((r) => round(r.latency.ms.p99 / r.latency.bareMs.p99, 2)),
    head('  deliveries (missing)') + cells((r) => `${r.latency.deliveries} (${r.latency.missing})`),
    head(`throughput deliveries/s (${opts.burstRounds} rnd)`) +
      cells((r) => `${r.throughput.deliveriesPerSecond} (${r.vsQuiet.throughputRatio}×)`),
    head(`  ${opts.burstDeliveries} at once: rounds/s`) +
      cells((r) => r.throughput.rounds.map((x) => Math.round(x.deliveriesPerSecond)).join(' ')),
    head('  first arrival ms, rounds') +
      cells((r) => r.throughput.rounds.map((x) => Math.round(x.firstArrivalMs)).join(' ')),
    head('  first→last received /s') + cells((r) => r.throughput.medianFirstToLastPerSecond),
    head('  burst latency p50 / p99 ms') +
      cells((r) => `${r.throughput.latencyMs.p50} / ${r.throughput.latencyMs.p99}`),
    head('noise in flight avg/max: latency') +
      cells((r) => {
        const o = r.noise?.inFlightAtReceivers.latency;
        return o ? `${o.avg} / ${o.max}` : '—';
      }),
    head('  … during throughput') +
      cells((r) => {
        const o = r.noise?.inFlightAtReceivers.throughput;
        return o ? `${o.avg} / ${o.max}` : '—';
      }),
    head('noisy requests slow/fail/hole') +
      cells((r) =>
        r.noise
          ? `${r.noise.receiverRequests.slow}/${r.noise.receiverRequests.failing}/${r.noise.receiverRequests.blackHole}`
          : '—',
      ),
    head('breakers opened slow/fail/hole') +
      cells((r) => (r.noise ? noiseKinds.map((k) => r.noise!.outcome.breakersOpenedByKind[k] ?? 0).join('/') : '—')),
    head('window s') + cells((r) => r.windowSeconds),
    head(`peak open at receivers, at most (cap ${s.concurrency * opts.dispatchers})`) +
      cells((r) => r.peakOpenAtReceivers),
    head('dispatchers CPU s (cores)') + cells((r) => `${r.dispatcher.cpuSeconds} (${r.dispatcher.cores})`),
    head('dispatcher peak RSS MiB (max)') +
      cells((r) => `${r.dispatcher.peakRss.peakRssMiB}${r.dispatcher.peakRss.from === 'VmHWM' ? '' : '*'}`),
    head('dispatcher peak sockets (max)') + cells((r) => r.dispatcher.peakSockets),
    head('dispatcher loop delay p99 / max ms') +
      cells((r) => `${r.dispatcher.eventLoopDelay.p99Ms} / ${r.dispatcher.eventLoopDelay.maxMs}`),
    head('its PG backends CPU s (cores)') +
      cells((r) => `${r.postgres.backendCpuSeconds} (${r.postgres.backendCores})`),
    head('db commits/s (dispatcher)') +
      cells((r) => `${r.postgres.commitsPerSecond} (${r.postgres.dispatcherCommitsPerSecond})`),
    head('machine busy cores (other)') + cells((r) => `${r.cpu.busyCores} (${othersCores(r.cpu)})`),
    '',
    `dispatcher RSS: ${idleRssMiB} MiB idle after start, peak ${dispatcherHwm} MiB ` +
      `(VmHWM per phase, reset at its start${evaluated.some((r) => r.dispatcher.peakRss.from !== 'VmHWM') ? '; * sampled VmRSS' : ''})`,
    ...evaluated
      .filter((r) => r.noise)
      .map(
        (r) =>
          `${r.phase} noise afterwards: attempts ${JSON.stringify(r.noise!.outcome.attempts)}, deliveries ` +
          `${JSON.stringify(r.noise!.outcome.deliveries)}, breakers open at the end ${JSON.stringify(r.noise!.outcome.breakersOpenNowByKind)}, ` +
          `endpoints disabled by the dispatcher ${r.noise!.outcome.disabledByDispatcher}`,
      ),
    `goals (vs quiet): healthy p99 ≤ ${goals.p99Ratio}× quiet and < ${goals.p99Ms} ms (outage: < ${outageP99Ms} ms); ` +
      `throughput within ${goals.throughputLossPercent} %; requests open never above the slots`,
    ...evaluated
      .filter((r) => r.phase !== 'quiet')
      .map(
        (r) =>
          `  ${r.phase.padEnd(11)} p99 ${r.latency.ms.p99} ms = ${r.vsQuiet.p99Ratio}× quiet: ${yes(r.goals.p99WithinRatio)} ` +
          `(the bare dispatcher's: ${r.vsQuiet.bareP99Ratio}× quiet); ` +
          `under ${p99GoalMs(r.phase)} ms: ${yes(r.goals.p99UnderMs)}; throughput ${r.vsQuiet.throughputRatio}× quiet: ` +
          `${yes(r.goals.throughputWithin)}; peak open ${r.peakOpenAtReceivers} ≤ ${s.concurrency * opts.dispatchers}: ${yes(r.goals.peakWithinCap)}`,
      ),
    ...evaluated
      .filter((r) => r.phase === 'quiet')
      .map((r) => `  quiet       p99 ${r.latency.ms.p99} ms under ${goals.p99Ms} ms: ${yes(r.goals.p99UnderMs)}`),
    ...(result.bareSender
      ? [
          `bare keep-alive sender (post.ts, no PostgreSQL), ${result.bareSender.deliveries} deliveries, ` +
            `${result.bareSender.inFlight} in flight, rounds alternated with the dispatchers' (failed ${result.bareSender.failed}):`,
          `  rounds dispatchers / bare /s   ${result.bareSender.rounds.map((r) => `${Math.round(r.dispatchers)}/${Math.round(r.bare)}`).join(' ')}`,
          `  dispatchers ÷ bare (median pair, goal ≥ ${bareRatioGoal}): ${result.bareSender.ratio} ` +
            `(${result.bareSender.dispatchersPerSecond} ÷ ${result.bareSender.deliveriesPerSecond}/s): ` +
            `${yes(result.bareSender.ratio >= bareRatioGoal)}`,
        ]
      : []),
    ...beforeAfter(evaluated.find((r) => r.phase === 'quiet')?.latency ?? null),
    ...evaluated
      .filter((r) => othersCores(r.cpu) > 0.3)
      .map(
        (r) => `warning: other processes used ${othersCores(r.cpu)} cores during ${r.phase}: figures are less reliable`,
      ),
    '',
  ];
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const json = `${JSON.stringify(result, null, 2)}\n`;
  const file = join(dir, `webhooks-${result.runAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, json);
  writeFileSync(join(dir, 'webhooks-latest.json'), json);
  out.push(`results: ${file.slice(repoRoot.length)} (and bench/results/webhooks-latest.json)`, '');
  process.stdout.write(out.join('\n'));
}

async function teardown() {
  for (const d of dispatchers) await d.stop();
  await bareDispatcher?.stop();
  for (const r of receivers) await r.stop();
  await pool?.end().catch(() => undefined);
  await pgAdmin?.end().catch(() => undefined);
  const drop = createPool(maintenanceUrl.toString(), 1, 'bench-webhooks-cleanup');
  await drop.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => undefined);
  await drop.end();
}

await runBench(run, teardown);
