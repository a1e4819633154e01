import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type pg from 'pg';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { admin } from '../support/fixtures.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import {
  otherNode,
  pgHaUnavailable,
  startThrowawayPgHa,
  type PgHaNode,
  type ThrowawayPgHa,
} from '../support/throwaway-pg-ha.js';
import { scaled } from '../support/time-scale.js';
import { appliedAgain } from './failover-figures.js';
import { count, expectMixedLoadOutcome, MixedLoad, mixedLoadOutcome, mixedLoadStock, ok } from './mixed-load.js';
import {
  converge,
  expectedOracle,
  diagnose,
  killAllFleets,
  oracle,
  startScenario,
  testPool,
  waitFor,
  type FaultWindow,
  type Scenario,
} from './harness.js';

// Issue 40: PostgreSQL fails over under load. The service's DATABASE_URL points at HAProxy in
// front of two Patroni nodes (PostgreSQL 15, synchronous_mode) and etcd, built from Debian
// packages (test/support/throwaway-pg-ha.ts). The real gateway and workers of every kind run as
// processes under mixed load: the fault harness's writes (inbound singles and batches, job
// creations) and reads, plus material usages, appointment requests, webhook deliveries to a
// receiver here and event-feed long-polls. Three faults, one after another, each to the end:
//   1. the leader's postmaster SIGKILLed (Patroni fails over to the sync standby);
//   2. a planned switchover (patronictl switchover --force);
//   3. a switchover while HAProxy keeps routing to the old primary (its health check held, the
//      new leader in maintenance) for a while: the old node answers as a read-only standby, as an
//      address that has not moved yet (DNS TTL, a late virtual IP, a proxy's stale check) serves it.
// After each: every acknowledged write is there exactly once and done, stock is exact, nothing was
// dead-lettered, every webhook event was delivered, long-polls saw events written after the
// failover, health said PostgreSQL was the trouble while it was; failed requests are only 503 with
// Retry-After. Seconds from "HAProxy routes to the new leader" to "serving again" are printed per
// process (goal 5 s), never asserted.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true'; // the receiver is on 127.0.0.1 (admin CLI check)

const unavailable = pgHaUnavailable();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number | null | undefined) => (ms === null || ms === undefined ? '-' : (ms / 1000).toFixed(1));

let ha: ThrowawayPgHa;
let pool: pg.Pool;
let receiver: WebhookReceiver;

beforeAll(async () => {
  if (unavailable) return;
  const [h, r] = await Promise.allSettled([startThrowawayPgHa(), startWebhookReceiver()]);
  if (h.status === 'fulfilled') ha = h.value;
  if (r.status === 'fulfilled') receiver = r.value;
  if (h.status === 'rejected') throw h.reason;
  if (r.status === 'rejected') throw r.reason;
  pool = testPool(ha.url);
}, scaled(400_000));

afterAll(async () => {
  await killAllFleets();
  await pool?.end();
  await receiver?.close();
  await ha?.stop();
}, scaled(180_000));

// ---------------------------------------------------------------------------------------------
// Readiness of every process, polled

type Probe = { proc: string; at: number; status: number | 'none'; postgres: string | null; error: string | null };

function pollReadiness(s: Scenario, probes: Probe[]) {
  let on = true;
  const workerUrls = () => {
    const urls = new Map<string, string>();
    for (const line of s.fleet.linesMentioning(['workers: metrics on'])) {
      const m = /^([^#]+)#\d+: .*workers: metrics on (http:\/\/[^\s"\\]+)/.exec(line);
      if (m) urls.set(m[1]!, m[2]!);
    }
    return urls;
  };
  const probe = async (proc: string, url: string) => {
    const start = Date.now();
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(10_000) });
      const body = (await res.json()) as { checks?: { postgres?: { status: string; error: string | null } } };
      probes.push({
        proc,
        at: start,
        status: res.status,
        postgres: body.checks?.postgres?.status ?? null,
        error: body.checks?.postgres?.error ?? null,
      });
    } catch (err) {
      probes.push({ proc, at: start, status: 'none', postgres: null, error: String((err as Error).message) });
    }
  };
  const loop = (async () => {
    while (on) {
      const gateway = s.fleet.url();
      await Promise.all([
        ...(gateway ? [probe('gateway', gateway)] : []),
        ...[...workerUrls()].map(([name, url]) => probe(name, url)),
      ]);
      await sleep(500);
    }
  })();
  return async () => {
    on = false;
    await loop;
  };
}

// ---------------------------------------------------------------------------------------------
// Checks after each fault

type FaultRun = {
  name: string;
  window: FaultWindow;
  from: PgHaNode;
  to: PgHaNode;
  /** The fault: the kill, or the switchover's start. */
  t0: number;
  promoted: number | null;
  /** HAProxy routes to the new leader. */
  routed: number | null;
  /** Extra figures of the fault, for its line. */
  notes: string[];
  /** While the service could not write (t0 … routed, or the read-only hold). */
  outage: { from: number; to: number };
  /** Fault 3: while the proxy served only the old primary, up as a read-only standby. */
  readOnlyHold?: { from: number; to: number };
};

describe.skipIf(unavailable)('PostgreSQL failover (Patroni, synchronous replication, HAProxy) under mixed load', () => {
  it(
    'a killed primary, a switchover and a stale route to the read-only old primary: nothing acknowledged lost, nothing dead-lettered, back by itself',
    async () => {
      const s = await startScenario({
        name: 'pg-failover',
        pool,
        databaseUrl: ha.url,
        brokers: inject('kafkaBrokers'),
        workers: {
          'workers-inbound': 'inbound,inbound-express',
          'workers-apply': 'jobs,materials,appointments',
          'workers-webhooks': 'webhooks',
        },
        env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_INTERVAL_MS: '200' },
        // Batches of 150 targets span several chunks (INBOUND_CHUNK_MAX_BYTES 16 KiB); singles are small.
        load: { writeLanes: 3, readLanes: 1, batchSize: 150 },
        startLoad: false,
      });
      const { load, demo } = s;
      const clientId = demo.clients.all!.clientId;
      await admin(pool, webhookCreate, ['--client', clientId, '--url', receiver.url('/hooks'), '--events', 'all']);
      const stock = await mixedLoadStock(pool, demo.tenantId);
      const mixed = new MixedLoad(s, stock.item);
      const probes: Probe[] = [];
      const stopProbes = pollReadiness(s, probes);

      load.start();
      mixed.start();
      const warm =
        (await load.waitForAcks(20, 0, 120_000)) &&
        (await waitFor(() => mixed.usages.size >= 5 && mixed.appointments.size >= 2 && mixed.feed.length > 0, 60_000));
      expect(warm, 'every kind of write acknowledged and the feed read before the faults').toBe(true);

      const runs: FaultRun[] = [];
      const failures: string[] = [];

      /** Waits for the new leader and HAProxy's route to it after a fault at t0. */
      async function failedOver(run: Omit<FaultRun, 'promoted' | 'routed' | 'outage'>): Promise<FaultRun> {
        const promoted = await ha.until(() => ha.writable(run.to), scaled(60_000));
        const routed = await ha.waitHaproxyUp(run.to, run.t0, scaled(60_000));
        return { ...run, promoted, routed, outage: { from: run.t0, to: routed ?? Date.now() } };
      }

      const faults: { name: string; inject: () => Promise<FaultRun> }[] = [
        {
          name: 'primary-postmaster-killed',
          async inject() {
            const window = load.faultStart();
            const { node: from, at: t0 } = await ha.killPrimaryPostmaster();
            window.down = t0;
            return failedOver({ name: this.name, window, from, to: otherNode(from), t0, notes: [] });
          },
        },
        {
          name: 'switchover',
          async inject() {
            const window = load.faultStart();
            const sw = await ha.switchover();
            window.down = sw.at;
            const run = await failedOver({ name: this.name, window, from: sw.from, to: sw.to, t0: sw.at, notes: [] });
            const done = await sw.done;
            run.notes.push(
              `patronictl returned after ${seconds(done.at - sw.at)} s: ${/Successfully switched over[^\n]*|failed[^\n]*/.exec(done.output)?.[0] ?? done.output.slice(-200)}`,
            );
            return run;
          },
        },
        {
          name: 'stale-route-to-read-only-old-primary',
          async inject() {
            const from = (await ha.leader())!;
            const to = otherNode(from);
            // The proxy keeps the old primary UP whatever Patroni says, and the new leader out.
            const held = [
              await ha.haproxy(`disable health pg_primary/node${from}`),
              await ha.haproxy(`set server pg_primary/node${to} state maint`),
            ];
            const window = load.faultStart();
            const sw = await ha.switchover();
            window.down = sw.at;
            const promoted = await ha.until(() => ha.writable(to), scaled(60_000));
            // The old node back as a hot standby: through the proxy, reads work and writes get 25006.
            const readOnly = await ha.until(() => ha.readOnly(from), scaled(60_000));
            const done = await sw.done;
            // Held long enough for every process to meet the read-only node (writes, applies, leases).
            const holdFrom = readOnly ?? Date.now();
            await waitFor(
              () =>
                Date.now() - holdFrom >= 8000 &&
                load.writeAttempts(holdFrom).filter((a) => a.outcome !== 'network' && !ok(a.outcome)).length >= 3,
              30_000,
            );
            const routed = Date.now();
            const released = [
              await ha.haproxy(`set server pg_primary/node${to} state ready`),
              await ha.haproxy(`enable health pg_primary/node${from}`),
            ];
            return {
              name: this.name,
              window,
              from,
              to,
              t0: sw.at,
              promoted,
              routed,
              outage: { from: sw.at, to: routed },
              readOnlyHold: { from: holdFrom, to: routed },
              notes: [
                `HAProxy runtime API: ${JSON.stringify([...held, ...released].filter(Boolean))}`,
                `old primary node${from} answered read-only through the proxy from +${seconds(readOnly === null ? null : readOnly - sw.at)} s for ${seconds(routed - holdFrom)} s`,
                `patronictl returned after ${seconds(done.at - sw.at)} s`,
              ],
            };
          },
        },
      ];

      for (const fault of faults) {
        const syncBefore = await ha.waitSyncStandby(scaled(120_000));
        expect(syncBefore, `${fault.name}: a synchronous standby before the fault\n${await ha.list()}`).not.toBeNull();
        const run = await fault.inject();
        runs.push(run);
        run.window.up = run.routed;
        const routed = run.routed ?? Date.now();
        const recovered = await load.waitForAcks(10, routed, 90_000);
        run.window.end = Date.now();
        // Every worker kind applies again: something applied after the route moved.
        const workerKinds = async () => {
          const applied = await appliedAgain(pool, demo.tenantId, routed);
          const { rows } = await pool.query(
            `SELECT (SELECT min(h.at) FROM appointment_status_history h JOIN appointment_requests r ON r.id = h.appointment_request_id
                      WHERE r.tenant_id = $1 AND h.actor = 'system' AND h.at >= $2) AS appointments`,
            [demo.tenantId, new Date(routed)],
          );
          const firstHook = receiver
            .received('/hooks')
            .map((r) => Date.now() - (performance.now() - r.at))
            .filter((at) => at >= routed)
            .sort((a, b) => a - b)[0];
          const since = (t: Date | number | null | undefined) =>
            t === null || t === undefined
              ? null
              : Math.round(((t instanceof Date ? t.getTime() : t) - routed) / 100) / 10;
          return { ...applied, appointments: since(rows[0].appointments), webhooks: since(firstHook) };
        };
        const resumed = await waitFor(
          async () => Object.values(await workerKinds()).every((v) => typeof v === 'number'),
          90_000,
        );
        const kinds = await workerKinds();
        const rejoined = await ha.waitSyncStandby(scaled(120_000));

        // Pause the writers and settle, then judge everything acknowledged so far.
        await Promise.all([load.stop(), mixed.stop()]);
        const converged = await converge(pool, demo.tenantId);
        const result = await oracle(pool, load, demo.tenantId, s.sourceSystem);
        const expected = expectedOracle(load);
        const outcome = await mixedLoadOutcome(s, mixed, { pool, receiver, stock });
        const createdAt = new Map(outcome.feedOrder.map((r) => [r.id, r.createdAt]));
        const after = mixed.feed.filter((e) => (createdAt.get(e.id) ?? 0) >= routed);
        const delays = after.map((e) => e.at - createdAt.get(e.id)!).sort((a, b) => a - b);
        const earlyPolls = mixed.polls.filter(
          (p) => p.start >= routed && p.events > 0 && p.end - p.start < 4500,
        ).length;

        // Requests during the fault and the recovery, by answer.
        const from = run.t0;
        const to = run.window.end!;
        const attempts = [
          ...load.writes.flatMap((w) => w.attempts).map((a) => ({ ...a, lane: 'writes' })),
          ...load.reads.map((r) => ({ ...r.attempt, lane: r.kind })),
          ...mixed.tries,
        ].filter((a) => a.start >= from && a.start <= to);
        const byStatus = new Map<string, number>();
        for (const a of attempts.filter((x) => !ok(x.outcome))) {
          const key = `${a.outcome}${a.outcome === 503 && !a.retryAfter ? ' without Retry-After' : ''}`;
          byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
        }
        const reasons = new Map<string, number>();
        for (const a of attempts.filter((x) => !ok(x.outcome)))
          reasons.set(`${a.outcome} ${a.error ?? ''}`, (reasons.get(`${a.outcome} ${a.error ?? ''}`) ?? 0) + 1);
        const slowest = Math.max(0, ...attempts.filter((a) => a.lane !== 'event-feed').map((a) => a.end - a.start));
        const wrong = attempts.filter(
          (a) => !ok(a.outcome) && !((a.outcome === 503 && a.retryAfter) || a.outcome === 429),
        );

        // Serving again, per process: the gateway's first acknowledged write sent after the route
        // moved, each process's /readyz 200 again, each worker kind's first apply.
        const firstAck = load.writes
          .flatMap((w) => w.attempts)
          .filter((a) => ok(a.outcome) && a.start >= routed)
          .sort((a, b) => a.end - b.end)[0];
        const procs = [...new Set(probes.map((p) => p.proc))].sort();
        const readiness = procs.map((proc) => {
          const mine = probes.filter((p) => p.proc === proc && p.at >= from && p.at <= to);
          const notReady = mine.filter((p) => p.status !== 200);
          const readyAgain = probes.find((p) => p.proc === proc && p.status === 200 && p.at >= routed);
          const said = [
            ...new Set(notReady.map((p) => `${p.status} postgres ${p.postgres}: ${p.error ?? ''}`.slice(0, 90))),
          ];
          return {
            proc,
            notReady: notReady.length,
            saidPostgres: notReady.some((p) => p.postgres === 'Down'),
            line: `${proc} ${notReady.length ? `not ready ${notReady.length}x [${said.slice(0, 2).join(' | ')}], ` : 'never not ready, '}ready again +${seconds(readyAgain ? readyAgain.at - routed : null)} s`,
          };
        });
        const health = load.reads.filter(
          (r) => r.kind === 'health' && r.attempt.start >= run.outage.from && r.attempt.start <= run.outage.to,
        );
        const healthSaid = [...new Set(health.map((r) => `${r.attempt.outcome} ${r.bodyStatus}`))];
        // Fault 3: what each process's /readyz and the integration health said while PostgreSQL
        // answered, but read-only (writes impossible): a degraded dependency.
        const hold = run.readOnlyHold;
        const inHold = (t: number) => !!hold && t >= hold.from && t <= hold.to;
        const holdProbes = probes.filter((p) => inHold(p.at));
        const holdHealth = load.reads.filter((r) => r.kind === 'health' && inHold(r.attempt.start));
        const holdSaid = (proc: string) =>
          [
            ...new Set(
              holdProbes
                .filter((p) => p.proc === proc)
                .map((p) => `${p.status} postgres ${p.postgres}${p.error ? `: ${p.error}` : ''}`.slice(0, 90)),
            ),
          ].join(' | ');
        const holdReads = load.reads.filter((r) => r.kind !== 'health' && inHold(r.attempt.start));
        const holdWrites = load.writeAttempts(hold?.from ?? 0, hold?.to ?? 0);

        console.log(
          [
            `faults[pg-failover/${run.name}]: node${run.from} -> node${run.to}; ` +
              `promoted +${seconds(run.promoted === null ? null : run.promoted - run.t0)} s, ` +
              `HAProxy routes to node${run.to} +${seconds(run.routed === null ? null : run.routed - run.t0)} s; ` +
              `${(await ha.haproxyEvents(run.t0)).map((e) => `node${e.node} ${e.state} +${seconds(e.at - run.t0)}`).join(', ')}`,
            ...run.notes.map((n) => `  ${n}`),
            `  seconds from the route to serving again: gateway (first acknowledged write sent after it) +${seconds(firstAck ? firstAck.end - routed : null)}; ` +
              `first apply per worker kind ${JSON.stringify(kinds)}`,
            `  readiness: ${readiness.map((r) => r.line).join('; ')}`,
            `  integration health while PostgreSQL was out: ${JSON.stringify(healthSaid)}`,
            ...(hold
              ? [
                  `  while only the read-only old primary was reachable (${seconds(hold.to - hold.from)} s): writes ${JSON.stringify(count(holdWrites.map((a) => a.outcome)))}, ` +
                    `reads ${JSON.stringify(count(holdReads.map((r) => r.attempt.outcome)))}, integration health ${JSON.stringify(count(holdHealth.map((r) => `${r.attempt.outcome} ${r.bodyStatus}`)))}; ` +
                    `/readyz: ${procs.map((p) => `${p} [${holdSaid(p)}]`).join('; ')}`,
                ]
              : []),
            `  requests from the fault to writes acknowledged again (${attempts.length}): failed by status ${JSON.stringify(Object.fromEntries(byStatus))}; ` +
              `${[...reasons].map(([k, v]) => `${v}x "${k}"`).join(', ')}; slowest answer (long-polls aside) ${seconds(slowest)} s`,
            `  checked: ${result.importJobs.acknowledged} import jobs (${result.targets.acknowledged} targets), ${result.jobs.acknowledged} jobs, ` +
              `${mixed.usages.size} material usages (balance ${outcome.usages.balance}, expected ${outcome.usages.expectedBalance}), ` +
              `${mixed.appointments.size} appointment requests, ${outcome.webhooks.events} webhook events (${outcome.webhooks.duplicates} delivered twice), ` +
              `dead letters ${outcome.deadLetters.count}, feed ${mixed.feed.length} events read; ${after.length} written after the route moved ` +
              `reached long-polls after ${seconds(delays[0])}..${seconds(delays.at(-1))} s (${earlyPolls} long-polls woken early)`,
            `  old node back as sync standby +${seconds(rejoined === null ? null : rejoined - run.t0)} s`,
          ].join('\n'),
        );

        const name = run.name;
        expect.soft(run.promoted, `${name}: node${run.to} promoted`).not.toBeNull();
        expect.soft(run.routed, `${name}: HAProxy routes to node${run.to}`).not.toBeNull();
        expect.soft(recovered, `${name}: writes acknowledged again after the route moved`).toBe(true);
        expect.soft(resumed, `${name}: every worker kind applied again: ${JSON.stringify(kinds)}`).toBe(true);
        expect.soft(rejoined, `${name}: node${run.from} back as the synchronous standby`).not.toBeNull();
        expect.soft(converged, `${name}: every import job and job request settled`).toBe(true);
        expect.soft(result, `${name}: acknowledged writes exactly once and done`).toEqual(expected);
        expectMixedLoadOutcome(outcome, mixed, `${name}: `);
        expect
          .soft(after.length, `${name}: events written after the route moved, seen by long-polls`)
          .toBeGreaterThan(0);
        expect
          .soft(
            [
              ...new Set(
                wrong.map((a) => `${a.lane} ${a.outcome}${a.retryAfter ? '' : ' (no Retry-After)'} ${a.error ?? ''}`),
              ),
            ],
            `${name}: failed requests other than 503 with Retry-After (or 429)`,
          )
          .toEqual([]);
        expect
          .soft(
            readiness.filter((r) => r.proc === 'gateway').some((r) => r.saidPostgres) ||
              health.some((r) => r.bodyStatus !== 'Healthy'),
            `${name}: the gateway's /readyz or integration health said PostgreSQL was out while it was: ${JSON.stringify(healthSaid)} ${readiness.map((r) => r.line).join('; ')}`,
          )
          .toBe(true);
        if (hold) {
          expect
            .soft(holdWrites.length, `${name}: writes while only the read-only old primary was reachable`)
            .toBeGreaterThan(0);
          expect
            .soft(
              holdProbes.some((p) => p.proc === 'gateway' && p.status !== 200) ||
                holdHealth.some((r) => r.bodyStatus !== 'Healthy'),
              `${name}: the gateway's /readyz or integration health said PostgreSQL was degraded (read-only) while writes were refused: ` +
                `/readyz [${holdSaid('gateway')}], health ${JSON.stringify(count(holdHealth.map((r) => `${r.attempt.outcome} ${r.bodyStatus}`)))}`,
            )
            .toBe(true);
        }
        expect.soft(s.fleet.unexpectedExits(), `${name}: processes that exited on their own`).toEqual([]);
        // The diagnosis names every acknowledged id it did not find among the unsettled rows: the head is what matters.
        if (!isDeepStrictEqual(result, expected))
          failures.push(`${name}: ${(await diagnose(pool, load, s.fleet, demo.tenantId)).slice(0, 6000)}`);

        if (fault !== faults.at(-1)) {
          load.start();
          mixed.start();
          await load.waitForAcks(10, Date.now(), 60_000);
        }
      }

      await mixed.stopReading();
      await stopProbes();
      await s.fleet.stopAll();
      if (failures.length) console.log(`faults[pg-failover]: diagnosis\n${failures.join('\n')}`);
      const lines = s.fleet.linesMentioning(['"level":50', '"level":60', 'dead-letter', 'dead letter']).slice(0, 40);
      if (lines.length) console.log(`faults[pg-failover]: error lines of the processes\n${lines.join('\n')}`);
      expect.soft(s.fleet.unexpectedExits(), 'processes that exited on their own (or not 0 on SIGTERM)').toEqual([]);
    },
    scaled(900_000),
  );
});
