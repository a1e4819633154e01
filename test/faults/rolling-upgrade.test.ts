import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type pg from 'pg';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { dropDatabase } from '../support/database.js';
import { admin } from '../support/fixtures.js';
import {
  lastRelease,
  previousRelease,
  previousReleaseUnavailable,
  repoRoot,
  type PreviousRelease,
} from '../support/previous-release.js';
import { scaled } from '../support/time-scale.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import {
  converge,
  diagnose,
  expectedOracle,
  killAllFleets,
  oracle,
  startScenario,
  testPool,
  waitFor,
  type Scenario,
} from './harness.js';
import {
  count,
  expectMixedLoadOutcome,
  MixedLoad,
  mixedLoadOutcome,
  mixedLoadStock,
  ok,
  type Try,
} from './mixed-load.js';

// Issue 52: a rolling upgrade under the mixed load of the PostgreSQL failover test. The previous
// release (the last entry of releases.json, its tree materialised under .state/releases by
// test/support/previous-release.ts) runs as two gateways and one process per worker kind (the
// webhook dispatcher among them) on a database migrated by that release; the working tree's
// migrations run under the load; then each process is replaced by the working tree's, one at a
// time, as its Deployment rolls it (a gateway stops, then its replacement starts; a worker's
// replacement starts first, deploy/k8s/workers.yaml's maxSurge 1), with the stack's normal stop
// (SIGTERM, exit 0 within the grace) and readiness (/readyz 200) before the next; then each is replaced by the previous release's again (a roll
// back: the new migrations are expand-only, so the previous release runs on the new schema).
// Checked at the end as the failover test checks: every acknowledged write there exactly once
// and done, stock exact, appointments validated once, nothing dead-lettered, every webhook event
// delivered, the feed read in order; no answer other than 2xx or a 503 with Retry-After. The
// longest pause of the restarted kind's applied work and of acknowledged writes per restart are
// printed (goal 5 s), never asserted: the machine is shared.
//
// The load balancer is the harness's: a gateway leaves the rotation, and gets SIGTERM after the
// preStop pause of deploy/k8s/gateway.yaml (5 s), as a deleted pod does; its requests in flight
// must still be answered; its replacement joins the rotation once it listens. Without that pause
// (SIGTERM as it left the rotation) two requests routed to it just before met it closing: network
// errors, in one run of four on 2026-12-05.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true'; // the receiver is on 127.0.0.1 (admin CLI check)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number | null | undefined) => (ms === null || ms === undefined ? '-' : (ms / 1000).toFixed(1));

const unavailable = await previousReleaseUnavailable();
if (unavailable) console.warn(`faults[rolling-upgrade]: skipped: the previous release's tree: ${unavailable}`);

/** One process per worker kind, named by it; the dispatcher is `webhooks`. */
const kinds = ['inbound', 'inbound-express', 'jobs', 'materials', 'appointments', 'webhooks'] as const;
type Kind = (typeof kinds)[number];
const gateways = ['gateway-1', 'gateway-2'];
/** The gateway's preStop pause (deploy/k8s/gateway.yaml): out of the endpoints, then SIGTERM. */
const preStopMs = 5000;
/** The roll's order, both ways. */
const order = [...gateways, ...kinds];

let previous: PreviousRelease;
let receiver: WebhookReceiver;
let pool: pg.Pool;
let database: { url: string; drop: () => Promise<void> } | null = null;
const migrations: { tree: string; code: number | null; ms: number; start: number; output: string }[] = [];

/** `npm run migrate` of a tree (its migrate-cli under its tsx) on the test's database. */
function migrate(root: string, url: string): Promise<(typeof migrations)[number]> {
  return new Promise((resolve) => {
    const start = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/shared/db/migrate-cli.ts'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.once('exit', (code) => {
      const run = { tree: root, code, ms: Date.now() - start, start, output: output.slice(-4000) };
      migrations.push(run);
      resolve(run);
    });
  });
}

beforeAll(async () => {
  if (unavailable) return;
  const release = await previousRelease(scaled(600_000));
  if ('unavailable' in release) throw new Error(release.unavailable);
  previous = release;
  receiver = await startWebhookReceiver();
  database = await previousReleaseDatabase();
  pool = testPool(database.url);
}, scaled(900_000));

afterAll(async () => {
  await killAllFleets();
  await pool?.end();
  await receiver?.close();
  await Promise.all(databases.map((d) => d.drop()));
}, scaled(180_000));

const databases: { drop: () => Promise<void> }[] = [];

/**
 * A database of this file's own, migrated by the previous release (not a clone of the template,
 * which the working tree's migrations made); dropped after the file.
 */
async function previousReleaseDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = new URL(inject('templateDatabaseUrl'));
  const name = `connect_upgrade_${randomBytes(6).toString('hex')}`;
  const url = new URL(server);
  url.pathname = `/${name}`;
  server.pathname = '/postgres';
  const db = { url: url.toString(), drop: () => dropDatabase(server.toString(), name) };
  databases.push(db);
  const migrated = await migrate(previous.root, db.url);
  if (migrated.code !== 0) throw new Error(`the previous release's migrations failed: ${migrated.output}`);
  return db;
}

/** When each kind applied work since `since` (ms, sorted): the database's own stamps. */
async function applied(s: Scenario, clientId: string, since: number): Promise<Record<Kind, number[]>> {
  const express = s.config.inbound.expressMaxTargets;
  const { rows } = await pool.query<{ kind: Kind; at: Date }>(
    `SELECT CASE WHEN j.chunk_count = 1 AND j.accepted_count <= $4 THEN 'inbound-express' ELSE 'inbound' END AS kind,
            c.done_at AS at
       FROM import_job_chunks c JOIN import_jobs j ON j.id = c.import_job_id
      WHERE j.tenant_id = $1 AND c.done_at >= $2
     UNION ALL
     SELECT 'jobs', materialized_at FROM job_requests WHERE tenant_id = $1 AND materialized_at >= $2
     UNION ALL
     SELECT 'materials', applied_at FROM material_usages WHERE tenant_id = $1 AND applied_at >= $2
     UNION ALL
     SELECT 'appointments', h.at FROM appointment_status_history h
       JOIN appointment_requests r ON r.id = h.appointment_request_id
      WHERE r.tenant_id = $1 AND h.actor = 'system' AND h.at >= $2
     UNION ALL
     SELECT 'webhooks', a.finished_at FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id
      WHERE e.client_id = $3 AND a.outcome = 'Succeeded' AND a.finished_at >= $2`,
    [s.demo.tenantId, new Date(since), clientId, express],
  );
  const out = Object.fromEntries(kinds.map((k) => [k, [] as number[]])) as Record<Kind, number[]>;
  for (const r of rows) out[r.kind].push(r.at.getTime());
  for (const k of kinds) out[k].sort((a, b) => a - b);
  return out;
}

/**
 * The longest gap between consecutive stamps from the last one at or before `from` to the first
 * one at or after `to` (null: none after `to`).
 */
function longestPause(stamps: number[], from: number, to: number): number | null {
  const before = stamps.filter((t) => t <= from).at(-1) ?? from;
  const after = stamps.find((t) => t >= to);
  if (after === undefined) return null;
  const points = [before, ...stamps.filter((t) => t > before && t < after), after];
  let longest = 0;
  for (let i = 1; i < points.length; i++) longest = Math.max(longest, points[i]! - points[i - 1]!);
  return longest;
}

/** The longest gap between consecutive stamps within [from, to]. */
function longestGapWithin(stamps: number[], from: number, to: number): number | null {
  const inside = stamps.filter((t) => t >= from && t <= to);
  if (inside.length < 2) return null;
  let longest = 0;
  for (let i = 1; i < inside.length; i++) longest = Math.max(longest, inside[i]! - inside[i - 1]!);
  return longest;
}

type Restart = {
  name: string;
  direction: 'up' | 'down';
  /** Taken out of the rotation (a gateway) or sent SIGTERM (a worker). */
  stopAt: number;
  termAt: number;
  exitedAt: number;
  /** SIGTERM did not end it within the grace (it was SIGKILLed then). */
  termHung: boolean;
  /** Its replacement said it listens / runs. */
  startedAt: number;
  /** /readyz 200 (null: not within the deadline). */
  readyAt: number | null;
  /** A gateway: writes acknowledged after it was ready; a worker: its kind applied work after. */
  resumed: boolean;
  /** What its replacement's /livez says it is. */
  version: string | null;
};

describe.skipIf(!!unavailable)(`rolling upgrade from ${lastRelease().version} to the working tree under load`, () => {
  it(
    'replaces every process one at a time, up and back down: nothing acknowledged lost or applied twice, no failed request',
    async () => {
      const s = await startScenario({
        name: 'rolling-upgrade',
        pool,
        databaseUrl: database!.url,
        brokers: inject('kafkaBrokers'),
        gateways,
        workers: Object.fromEntries(kinds.map((k) => [k, k])),
        root: previous.root,
        env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_INTERVAL_MS: '200' },
        // Batches of 150 targets span several chunks (the inbound lane); singles take the express lane.
        load: { writeLanes: 3, readLanes: 1, batchSize: 150 },
        startLoad: false,
      });
      const { load, demo, fleet } = s;
      const clientId = demo.clients.all!.clientId;
      await admin(pool, webhookCreate, ['--client', clientId, '--url', receiver.url('/hooks'), '--events', 'all']);
      const stock = await mixedLoadStock(pool, demo.tenantId);
      const mixed = new MixedLoad(s, stock.item, 'upgrade');

      const t0 = Date.now();
      load.start();
      mixed.start();
      const warm =
        (await load.waitForAcks(20, 0, 120_000)) &&
        (await waitFor(async () => {
          const done = await applied(s, clientId, t0);
          return mixed.feed.length > 0 && kinds.every((k) => done[k].length > 0);
        }, 120_000));
      expect(warm, `every kind applied work and the feed was read before the roll (${previous.version})`).toBe(true);
      const warmAt = Date.now();

      // The new release's migrations, under the load, as the migration job runs them, once: each
      // migration is its own transaction and gives way on a busy lock (migrate.ts), so one run
      // applies them beside the previous release's transactions (before, they deadlocked with them
      // in 5 runs of 9: the second case below).
      const runs: (typeof migrations)[number][] = [await migrate(repoRoot, database!.url)];
      const migrated = { ...runs.at(-1)!, start: runs[0]!.start, ms: Date.now() - runs[0]!.start };
      const migrationFailures = runs
        .filter((r) => r.code !== 0)
        .map((r) => {
          const err = /"msg":"(migrations failed: [^"]*)"/.exec(r.output);
          const detail = /"detail":"([^"]*)"/.exec(r.output)?.[1] ?? '';
          return `${err?.[1] ?? r.output.slice(-300)}${detail ? ` (${detail})` : ''}`;
        });
      expect(migrated.code, `the working tree's migrations under the previous release: ${migrated.output}`).toBe(0);
      const migratedAt = Date.now();
      const { rows: ledger } = await pool.query<{ name: string }>('SELECT name FROM pgmigrations ORDER BY id');
      const newMigrations = /applied ([^"]*)/.exec(migrated.output)?.[1] ?? '(none)';

      const restarts: Restart[] = [];
      /** The fleet member now running each worker kind (a replacement is a new member: surge first). */
      const memberOf = new Map<string, string>(kinds.map((k) => [k, k]));
      const readyzOk = async (member: string) => {
        const url = fleet.readyzUrl(member);
        if (!url) return false;
        const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        return res.status === 200;
      };
      const stop = async (member: string) => {
        const exit = await Promise.race([fleet.kill(member, 'SIGTERM'), sleep(scaled(60_000)).then(() => null)]);
        if (!exit) await fleet.kill(member, 'SIGKILL');
        return !exit;
      };
      /**
       * Replaces a process as its Deployment rolls it. A gateway: out of the rotation, the preStop
       * pause, SIGTERM, its exit, the other tree's, its readiness. A worker: surge first
       * (deploy/k8s/workers.yaml: maxSurge 1, maxUnavailable 0), the other tree's process starts
       * and is ready beside it, then SIGTERM and its exit. Then its work resumed.
       */
      async function replace(name: string, direction: Restart['direction'], root: string | undefined) {
        const stopAt = Date.now();
        let termAt: number, exitedAt: number, startedAt: number, termHung: boolean, member: string;
        let readyAt: number | null;
        if (gateways.includes(name)) {
          // As deployed: the endpoints drop the pod, its preStop pause lets that spread, then SIGTERM.
          fleet.leaveRotation(name);
          await sleep(preStopMs);
          termAt = Date.now();
          termHung = await stop(name);
          exitedAt = Date.now();
          await fleet.restart(name, { root });
          startedAt = Date.now();
          readyAt = (await waitFor(() => readyzOk(name), 120_000)) ? Date.now() : null;
          member = name;
        } else {
          const old = memberOf.get(name)!;
          member = `${name}-${direction}`;
          await fleet.workers(member, name, {}, { root });
          startedAt = Date.now();
          readyAt = (await waitFor(() => readyzOk(member), 120_000)) ? Date.now() : null;
          termAt = Date.now();
          termHung = await stop(old);
          exitedAt = Date.now();
          memberOf.set(name, member);
        }
        const version = await fetch(fleet.readyzUrl(member)?.replace(/\/readyz$/, '/livez') ?? 'http://127.0.0.1:1')
          .then(async (res) => ((await res.json()) as { version?: string }).version ?? null)
          .catch(() => null);
        const since = Math.max(readyAt ?? startedAt, exitedAt);
        const resumed = gateways.includes(name)
          ? await load.waitForAcks(5, since, 60_000)
          : await waitFor(async () => (await applied(s, clientId, since))[name as Kind].length > 0, 60_000);
        restarts.push({
          name,
          direction,
          stopAt,
          termAt,
          exitedAt,
          termHung,
          startedAt,
          readyAt,
          resumed,
          version,
        });
      }

      for (const name of order) await replace(name, 'up', undefined);
      const upAt = Date.now();
      for (const name of order) await replace(name, 'down', previous.root);

      // Stop the clients (the writes in hand retry until answered), replay a sample, settle, judge.
      await Promise.all([load.stop(), mixed.stop()]);
      const replays = await load.replay();
      const converged = await converge(pool, demo.tenantId);
      const result = await oracle(pool, load, demo.tenantId, s.sourceSystem);
      const expected = expectedOracle(load);
      const outcome = await mixedLoadOutcome(s, mixed, { pool, receiver, stock });
      await mixed.stopReading();

      // Every answer of the whole run that was not 2xx: only 503 with Retry-After is allowed.
      const attempts: Try[] = [
        ...load.writes.flatMap((w) => w.attempts.map((a) => ({ ...a, lane: `writes/${w.kind}` }))),
        ...load.reads.map((r) => ({ ...r.attempt, lane: r.kind })),
        ...mixed.tries,
      ];
      const failed = attempts.filter((a) => !ok(a.outcome));
      const wrong = failed.filter((a) => !(a.outcome === 503 && a.retryAfter));

      // Figures: per restart, the longest pause of the restarted kind's applied work and of
      // acknowledged writes (the harness's and the mixed load's) from the step's start (a gateway: out
      // of the rotation, 5 s before SIGTERM; a worker: its replacement launched) to the later of the
      // replacement's readiness and the old process's exit.
      const stamps = await applied(s, clientId, t0);
      const writeAcks = [
        ...load.writes.flatMap((w) => w.attempts),
        ...mixed.tries.filter((t) => t.lane === 'materials' || t.lane === 'appointments'),
      ]
        .filter((a) => ok(a.outcome))
        .map((a) => a.end)
        .sort((a, b) => a - b);
      const perRestart = restarts.map((r) => {
        const to = Math.max(r.readyAt ?? r.startedAt, r.exitedAt);
        const kind = gateways.includes(r.name) ? null : (r.name as Kind);
        return {
          ...r,
          kindPause: kind ? longestPause(stamps[kind], r.stopAt, to) : null,
          writesPause: longestPause(writeAcks, r.stopAt, to),
        };
      });
      const worst = (direction: Restart['direction']) =>
        perRestart
          .filter((r) => r.direction === direction)
          .map(
            (r) =>
              `${r.name} ${r.kindPause === null ? '' : `${seconds(r.kindPause)}/`}${seconds(r.writesPause)} ` +
              `(exit ${seconds(r.exitedAt - r.termAt)}, ready ${seconds(r.readyAt === null ? null : r.readyAt - r.stopAt)})`,
          )
          .join(', ');
      const baseline = kinds.map((k) => `${k} ${seconds(longestGapWithin(stamps[k], t0, migrated.start))}`);
      const byKind = kinds.map(
        (k) =>
          `${k} ${seconds(Math.max(...perRestart.filter((r) => r.name === k).map((r) => r.kindPause ?? Infinity)))}`,
      );
      const maxWrites = Math.max(...perRestart.map((r) => r.writesPause ?? Infinity));
      const c = load.counts();
      console.log(
        [
          `faults[rolling-upgrade]: ${previous.version} (${previous.commit.slice(0, 7)}, node_modules ${previous.dependencies}) -> working tree and back, ` +
            `${restarts.length} restarts in ${seconds(Date.now() - warmAt)} s; longest pause (s) per restart, the restarted kind's applied work / acknowledged writes, ` +
            `from the step's start (a worker: its replacement launched, SIGTERM once that is ready; a gateway out of the rotation, SIGTERM ${seconds(preStopMs)} s later) ` +
            `to the later of the replacement's readiness and the old one's exit (exit: SIGTERM to exit; ready: step's start to /readyz 200):`,
          `  up: ${worst('up')}`,
          `  down: ${worst('down')}`,
          `  longest per kind over all restarts: ${byKind.join(', ')}; acknowledged writes ${seconds(maxWrites)} (goal 5 s) | ` +
            `warm-up before the migrations (longest gap, no restart): ${baseline.join(', ')}, writes ${seconds(longestGapWithin(writeAcks, t0, migrated.start))}`,
          `  migrations under load: ${newMigrations} in ${seconds(migrated.ms)} s, ${runs.length} run(s)` +
            `${runs.length > 6 ? ' (more than a migration job runs: its deployment would have failed)' : ''}` +
            `${migrationFailures.length ? ` [failed: ${migrationFailures.join(' | ')}]` : ''}; acknowledged writes paused at most ` +
            `${seconds(longestPause(writeAcks, migrated.start, migratedAt))} s, per kind ` +
            `${kinds.map((k) => `${k} ${seconds(longestPause(stamps[k], migrated.start, migratedAt))}`).join(', ')}; ledger now ends at ${ledger.at(-1)?.name}`,
          `  answers: ${attempts.length} requests, not 2xx ${JSON.stringify(count(failed.map((a) => `${a.outcome}${a.outcome === 503 && !a.retryAfter ? ' without Retry-After' : ''}`)))}; ` +
            `writes acked ${load.acked().length}, unfinished ${c.unfinishedWrites}; ${mixed.usages.size} usages, ${mixed.appointments.size} appointment requests, ` +
            `${outcome.webhooks.events} webhook events (${outcome.webhooks.duplicates} received twice), feed ${mixed.feed.length} events read; dead letters ${outcome.deadLetters.count}; ` +
            `replayed ${replays.sent}: ${replays.notReplayed} not answered as a replay, ${replays.otherRecord} naming another record`,
        ].join('\n'),
      );
      if (!isDeepStrictEqual(result, expected))
        console.log(
          `faults[rolling-upgrade]: oracle mismatch\n${(await diagnose(pool, load, fleet, demo.tenantId)).slice(0, 6000)}`,
        );
      if (wrong.length)
        console.log(
          `faults[rolling-upgrade]: failed answers\n${wrong
            .slice(0, 30)
            .map(
              (a) =>
                `  ${a.lane} ${a.outcome} ${a.retryAfter ?? ''} ${a.error ?? ''} +${seconds(a.start - upAt)} s after the roll up`,
            )
            .join('\n')}`,
        );

      await fleet.stopAll();
      const errorLines = fleet.linesMentioning(['"level":50', '"level":60', 'dead-letter', 'dead letter']).slice(0, 40);
      if (errorLines.length)
        console.log(`faults[rolling-upgrade]: error lines of the processes\n${errorLines.join('\n')}`);
      if (fleet.unexpectedExits().length)
        console.log(`faults[rolling-upgrade]: unexpected exits\n${fleet.unexpectedOutput()}`);

      const newVersion = (JSON.parse(readFileSync(`${repoRoot}/package.json`, 'utf8')) as { version: string }).version;
      expect
        .soft(
          restarts.map((r) => `${r.direction} ${r.name} ${r.version}`),
          'every process replaced, up and down, by the release it should be (its /livez version)',
        )
        .toEqual([...order.map((n) => `up ${n} ${newVersion}`), ...order.map((n) => `down ${n} ${previous.version}`)]);
      expect
        .soft(
          restarts.filter((r) => r.termHung).map((r) => r.name),
          'SIGTERM did not end it in 60 s',
        )
        .toEqual([]);
      expect
        .soft(
          restarts.filter((r) => r.readyAt === null).map((r) => r.name),
          'not ready (/readyz) in time',
        )
        .toEqual([]);
      expect
        .soft(
          restarts.filter((r) => !r.resumed).map((r) => `${r.direction} ${r.name}`),
          'no work resumed after the replacement was ready',
        )
        .toEqual([]);
      expect.soft(converged, 'every import job and job request settled').toBe(true);
      expect.soft(result, 'acknowledged writes exactly once and done').toEqual(expected);
      expect.soft(replays.failures, 'acknowledged writes sent again: answered as replays').toEqual([]);
      expectMixedLoadOutcome(outcome, mixed);
      expect
        .soft(
          [
            ...new Set(
              wrong.map((a) => `${a.lane} ${a.outcome}${a.retryAfter ? '' : ' (no Retry-After)'} ${a.error ?? ''}`),
            ),
          ],
          'answers other than 2xx or 503 with Retry-After (network errors and timeouts included)',
        )
        .toEqual([]);
      expect.soft(fleet.unexpectedExits(), 'processes that exited on their own (or not 0 on SIGTERM)').toEqual([]);
    },
    scaled(900_000),
  );

  // Found by the scenario above (5 runs in 9 on 2026-12-05: "deadlock detected"): the migrations
  // ran in one transaction, so 0024's ALTER TABLE webhook_endpoints held its ACCESS EXCLUSIVE lock
  // while 0025 built an index on webhook_attempts; the previous release's dispatcher records an
  // attempt as INSERT INTO webhook_attempts, then SELECT … FROM webhook_endpoints … FOR UPDATE
  // (record.ts, lockEndpointHealth). Each waited for the other; PostgreSQL aborted one (when the
  // dispatcher, its success was sent again). Here the dispatcher's transaction is held between its
  // two statements, so the cycle formed every time. Now each migration is its own transaction and
  // waits for a lock at most migrationLockTimeoutMs before it is run again (migrate.ts).
  it(
    "the working tree's migrations beside the previous release's dispatcher recording an attempt: neither aborted by a deadlock",
    async () => {
      const db = await previousReleaseDatabase();
      const dispatcher = testPool(db.url);
      const watcher = testPool(db.url);
      const tx = await dispatcher.connect();
      try {
        // The previous release's recordAttempt, up to its second statement: insertAttempt's lock.
        await tx.query('BEGIN');
        await tx.query('LOCK TABLE webhook_attempts IN ROW EXCLUSIVE MODE');
        const migration = migrate(repoRoot, db.url);
        // The migration waits for webhook_attempts (0025's CREATE INDEX).
        const waiting = await waitFor(async () => {
          const { rows } = await watcher.query(
            `SELECT count(*)::int AS n FROM pg_locks
              WHERE NOT granted AND relation = 'webhook_attempts'::regclass AND pid <> pg_backend_pid()`,
          );
          return rows[0].n > 0;
        }, 60_000);
        expect(waiting, 'the migration waits for the dispatcher transaction').toBe(true);
        // lockEndpointHealth: the endpoint's row FOR UPDATE.
        const second = await tx
          .query('SELECT consecutive_failures FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [
            '00000000-0000-4000-8000-000000000000',
          ])
          .then(
            () => 'completed',
            (err: { code?: string; message: string }) => `${err.code} ${err.message}`,
          );
        await tx.query(second === 'completed' ? 'COMMIT' : 'ROLLBACK').catch(() => undefined);
        const run = await migration;
        const failure = /"msg":"(migrations failed: [^"]*)"/.exec(run.output)?.[1] ?? null;
        console.log(
          `faults[rolling-upgrade/migration-lock-order]: the previous release's dispatcher transaction: ${second}; ` +
            `the migrations: exit ${run.code}${failure ? ` (${failure})` : ''}`,
        );
        expect({ dispatcher: second, migrations: run.code }).toEqual({ dispatcher: 'completed', migrations: 0 });
      } finally {
        tx.release();
        await dispatcher.end();
        await watcher.end();
      }
    },
    scaled(300_000),
  );
});
