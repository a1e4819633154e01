import type { Config } from '../../shared/config.js';
import pg from 'pg';
import { transactionOn, unusableAfter, type Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { backoffMs, pause, schedules } from '../../shared/retry.js';
import type { PollingWorker } from '../start-workers.js';
import { noWorkerMetrics, type WorkerMetrics } from '../worker-metrics.js';
import { attemptDelivery, type AttemptDeps, type Begun } from './attempt.js';
import { Batcher } from './batch.js';
import { DispatcherSlots, unknownCostMs } from './dispatcher-slots.js';
import { createWebhookAgents, type AttemptResult } from './post.js';
import { leaseKeeper } from './lease.js';
import { startEventPruner } from './prune.js';
import { recordOutcomes, type Claimed, type Outcome, type Recorded, type RecordSettings } from './record.js';
import {
  beginAttempts,
  claimCandidates,
  claimDeliveries,
  claimLockId,
  lockClaimEndpoints,
  lockFreeClaimEndpoints,
  prepared,
} from './sql.js';
import { listenForDueDeliveries } from './wake.js';

export type DispatcherDeps = {
  webhooks: Config['webhooks'];
  logger: Logger;
  pool: Pool;
  metrics?: WorkerMetrics;
  /** Where to LISTEN for deliveries coming due (wake.ts); without it the dispatcher only polls. */
  databaseUrl?: string;
};

/** Outcomes recorded in one transaction at most (record.ts). */
const recordBatchMax = 128;

/**
 * Deliveries to endpoints not known to answer that one claim takes at most (more free slots:
 * claimed again at once). A claim holds its endpoints' locks until it commits, and its cost grows
 * with the endpoints it takes (each with its due deliveries): in bench:webhooks' outage, claims of
 * hundreds of noisy deliveries after a wave of timeouts held the claim lock of the time for 40-50
 * ms, and a healthy tenant's delivery waited behind them (issue 50).
 */
export const noisyClaimMax = 32;

/** How long a lease lasts from the attempt's start: its timeout plus time to record its outcome. */
export const leaseMs = (webhooks: Pick<Config['webhooks'], 'timeoutMs'>) => webhooks.timeoutMs + 5000;

/** What a claim loop takes: deliveries to endpoints that answer, or to the others. */
const claimKinds = ['answering', 'any'] as const;
type ClaimKind = (typeof claimKinds)[number];

/**
 * The claim loops a process runs, by its WEBHOOK_LANE: both, or one. Apart, a process of each
 * lane has an event loop of its own: in bench:webhooks' outage the noise's hundreds of open
 * requests, timeouts and recordings stalled a process's loop up to 170 ms, and a healthy delivery
 * in that process waited for it (issue 50).
 */
const laneLoops: Record<Config['webhooks']['lane'], readonly ClaimKind[]> = {
  all: claimKinds,
  answering: ['answering'],
  'not-answering': ['any'],
};

/**
 * A claim loop's states. polling: claims what its free slots may take. waiting: nothing more to
 * claim now; the poll interval, a slot coming free or a notification that deliveries came due
 * (wake.ts) ends it. backingOff: PostgreSQL did not answer the last poll (its failures in a
 * row); only stop() cuts the wait short.
 */
type LoopState =
  | { name: 'polling'; failures: number }
  | { name: 'waiting' }
  | { name: 'backingOff'; failures: number }
  | { name: 'stopped' };

/**
 * The webhook dispatcher: claims due deliveries from PostgreSQL with a lease, woken by the NOTIFY
 * of the transaction that made them due (wake.ts) and polling as the backstop (any
 * number of dispatcher processes share the work; one that dies leaves leases that expire), fairly
 * (dispatcher-slots.ts, sql.ts claimDeliveries: each endpoint its share in flight, slots held
 * back for endpoints that answer, free slots to the tenant that used least slot time lately,
 * each tenant at most its share of this process's slots), POSTs each signed event with a per-attempt
 * timeout and records every attempt (record.ts). The recording of a fast success begins its
 * endpoint's next due delivery in the same statement, sent in the same slot without a claim
 * (chaining: sql.ts recordSuccesses, chainable below). Failures are retried on the schedule; after the
 * last one the delivery is Failed and its endpoint Disabled; an endpoint that keeps failing is
 * backed off as a whole by its breaker (breaker.ts). PostgreSQL going away stops nothing: polls
 * back off and go on, outcomes wait to be recorded.
 */
export function startDispatcher({ webhooks, logger, pool, metrics = noWorkerMetrics, databaseUrl }: DispatcherDeps): {
  stop(): Promise<void>;
  /** Whether it is woken by NOTIFY now (its LISTEN connection is up); false without databaseUrl. */
  listening(): boolean;
  /** Slots held now (open requests and outcomes being recorded) and the most held at once since start. */
  slotsHeld(): { now: number; peak: number };
  /** Since start: claim transactions, the deliveries they took, deliveries chained after a success (no claim). */
  counts(): { claims: number; claimed: number; chained: number };
} {
  const log = logger.child({ worker: 'webhooks' });
  const slots = new DispatcherSlots({
    max: webhooks.concurrency,
    tenantSharePercent: webhooks.tenantSharePercent,
    // nothing to hold back where no delivery to an endpoint that answers is claimed
    reservePercent: webhooks.lane === 'not-answering' ? 0 : webhooks.reservePercent,
    slowMs: webhooks.slowAttemptMs,
  });
  const stopped = new AbortController();
  // Wakes claim loops (below): a waiting loop polls at once. One that comes during a poll is kept,
  // so the wait after that poll ends at once: the poll's snapshot may have missed what the
  // notification announced. Deliveries coming due (a NOTIFY) wake both; a slot coming free, see
  // launch.
  const wakers = new Map<ClaimKind, () => void>();
  const wake = (kinds: readonly ClaimKind[] = claimKinds) => {
    for (const kind of kinds) wakers.get(kind)?.();
  };
  /** Whether no slot was free at the answering loop's last poll. */
  let answeringStarved = false;
  const listener = databaseUrl
    ? listenForDueDeliveries(databaseUrl, wake, log, { onLost: (why) => metrics.webhookListenLost(why) })
    : null;
  const stopCountingRenewals = leaseKeeper(pool, leaseMs(webhooks), log).onRenewalFailed(() =>
    metrics.webhookLeaseRenewalFailed(),
  );
  // Claims, and the attempts to endpoints that answer, on connections of their own (as the
  // pool's, the lease keeper's way): they never queue behind the pool's checkouts for the
  // attempts to other endpoints, hundreds at once when many hanging requests time out together.
  // So a delivery to an endpoint that answers is claimed, begun and recorded as soon as it can be.
  const ownPool = (max: number, what: string, settings = '') => {
    const failed = (err: Error) => log.warn({ err: { message: err.message } }, `webhook ${what} connection failed`);
    const options = [pool.options.options, settings].filter(Boolean).join(' ') || undefined;
    const own = new pg.Pool({ ...pool.options, max, options }).on('error', failed); // an idle connection's
    return own.on('connect', (client) => client.on('error', failed)); // a checked-out one's
  };
  // Neither a claim's commit nor a beginning's waits for its WAL to reach the disk (a flush is
  // 3.5-4 ms on the bench's machine, and the claim's was held under the claim lock, so every
  // dispatcher's claims waited for each other's flushes). What that risks is a crash of
  // PostgreSQL (or a failover) only: commits are visible at once either way, and the WAL is
  // written in order, so the outcome's commit (flushed) makes the claim and the beginning before
  // it durable too. A crash before that loses the claim and the beginning of attempts in flight,
  // whose outcomes then cannot be recorded (the lease token is gone): those deliveries are sent
  // again and their lost attempt is not counted, as after any crash (at least once). A chained
  // delivery's beginning is in its predecessor's outcome commit, flushed.
  const claimPool = ownPool(2, 'claim', '-c synchronous_commit=off'); // one per claim loop
  const answeringPool = ownPool(Math.max(1, Math.ceil((pool.options.max ?? 10) / 2)), 'answering-lane');
  const agents = createWebhookAgents({ allowPrivate: webhooks.allowPrivateTargets }); // kept alive per origin (post.ts)
  const settings: RecordSettings = {
    retryScheduleMs: webhooks.retryScheduleMs,
    breaker: {
      failures: webhooks.breakerFailures,
      rate: { percent: webhooks.breakerFailureRatePercent, window: webhooks.breakerWindow },
      open: { baseMs: webhooks.breakerOpenMs, maxMs: webhooks.breakerOpenMaxMs, attempts: Infinity },
    },
    chain: {
      leaseMs: leaseMs(webhooks),
      endpointConcurrency: webhooks.endpointConcurrency,
      endpointConcurrencyMax: webhooks.endpointConcurrencyMax,
      inHand: () => slots.deliveryIds(webhooks.timeoutMs),
    },
  };
  /** Claim transactions, the deliveries they took, and the deliveries chained (begun by a success's recording). */
  const counts = { claims: 0, claimed: 0, chained: 0 };

  /**
   * Whether recording this outcome may begin its endpoint's next due delivery for the same slot
   * (sql.ts recordSuccesses), bypassing the claim: only a success that took less than
   * slowAttemptMs, to an endpoint with no slow request here (one the claim counts as answering),
   * while another slot is free (so the claim can still serve any other tenant's due delivery at
   * once: a chain never keeps a slot that someone else would have got), and not while stopping.
   * A failing, timing-out or slow endpoint's slot comes free and goes by the claim's fair order.
   */
  function chainable(o: Outcome): boolean {
    return (
      !stopped.signal.aborted &&
      webhooks.lane !== 'not-answering' && // its next deliveries are the answering lane's
      o.result.outcome === 'Succeeded' &&
      o.result.latencyMs !== null &&
      o.result.latencyMs < webhooks.slowAttemptMs &&
      slots.free() > 0 &&
      !slots.isSlow(o.delivery.endpoint_id)
    );
  }

  // Beginnings and outcomes are written in batches (batch.ts): whatever came meanwhile goes in
  // one statement (beginnings) or one transaction (outcomes) with the others of its lane. One
  // transaction per attempt made the pool's connections, not the receivers, the limit (issue 50:
  // a healthy delivery spent most of its time waiting for a connection to begin and to record).
  const lane = (
    lanePool: pg.Pool,
    what: string,
  ): Pick<AttemptDeps, 'pool' | 'begin' | 'record'> & { end(): Promise<void> } => {
    // One beginning at a time per lane, on a connection of its own: the answering lane's never
    // waits behind the beginning of hundreds of noisy deliveries (issue 50).
    const beginPool = ownPool(1, `${what} begin`, '-c synchronous_commit=off');
    const begins = new Batcher<Claimed, Begun>(
      async (ds) => {
        const { rows } = await beginPool.query<{ id: string; attempt_count: number; round_attempts: number }>(
          prepared('begin_attempts', beginAttempts, [
            ds.map((d) => d.id),
            ds.map((d) => d.lease_token),
            leaseMs(webhooks),
          ]),
        );
        const byId = new Map(rows.map((r) => [r.id, r]));
        return ds.map((d) => {
          const r = byId.get(d.id);
          return {
            status: 'fulfilled',
            value: r ? { attempt_count: r.attempt_count, round_attempts: r.round_attempts } : null,
          };
        });
      },
      { max: webhooks.concurrency, concurrency: 1 },
    );
    const records = new Batcher<Outcome, Recorded>((outcomes) => recordOutcomes(lanePool, settings, outcomes), {
      max: recordBatchMax,
      concurrency: 2,
    });
    return {
      pool: lanePool,
      begin: (d) => begins.submit(d),
      record: (o) => records.submit({ ...o, chain: chainable(o) }),
      end: () => beginPool.end(),
    };
  };
  const lanes = { answering: lane(answeringPool, 'answering-lane'), other: lane(pool, 'other-lane') };

  /**
   * The claim's fair choice (sql.ts chooseDue) as this process's slots stand now, of these
   * endpoints (null: all); `answering`: deliveries to endpoints that answer only; `any`: to the
   * others only (each loop its own endpoints: `answering` takes every slot it needs).
   */
  const chooseDueNow = (kind: ClaimKind, endpoints: string[] | null) => {
    const use = slots.tenantUse();
    return [
      slots.free(),
      webhooks.endpointConcurrency,
      webhooks.endpointConcurrencyMax,
      slots.tenantShare,
      use.ids,
      use.held,
      use.usedMs,
      use.costMs,
      kind === 'answering' ? 0 : Math.min(slots.unreservedFree(), noisyClaimMax),
      slots.slowEndpointIds({ openOnly: webhooks.lane === 'answering' }),
      unknownCostMs,
      // The deliveries in hand whose lease may have lapsed (PostgreSQL away for a whole lease:
      // their outcome waits to be recorded): each lease runs timeoutMs + 5 s from its attempt's
      // start, renewed meanwhile, so none younger. The claim compares every due delivery with them.
      slots.deliveryIds(webhooks.timeoutMs),
      endpoints,
      kind === 'any',
    ];
  };

  // One claim transaction of this process at a time (its two loops'), each reading the slots as
  // the one before left them (launched): neither the cap nor a tenant's share is overrun.
  let claimTurn: Promise<unknown> = Promise.resolve();
  const inClaimTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const turn = claimTurn.then(work, work);
    claimTurn = turn.catch(() => undefined);
    return turn;
  };

  /**
   * Claims what the free slots may take and launches it: finds where to look (claimCandidates,
   * no lock: the costly part, beside the other loop's claims), then, in this process's claim
   * turn, claims there in one transaction that locks those endpoints first (lockClaimEndpoints:
   * it waits only for claims and recordings of the same endpoints). Returns whether the claim
   * took all it could (more may be due).
   */
  async function claim(kind: ClaimKind): Promise<boolean> {
    const client = await claimPool.connect();
    let where: { endpoint_id: string }[];
    try {
      ({ rows: where } = await client.query<{ endpoint_id: string }>(
        prepared('claim_candidates', claimCandidates, chooseDueNow(kind, null)),
      ));
    } catch (err) {
      client.release(unusableAfter(err));
      throw err;
    }
    if (where.length === 0) {
      client.release();
      return false;
    }
    return inClaimTurn(async () => {
      const free = slots.free();
      if (free === 0) {
        client.release();
        return false;
      }
      counts.claims++;
      const claimed = await transactionOn(client, async (tx) => {
        // `any` never waits for its endpoints' recordings (in this process's claim turn, its
        // wait would be the next healthy claim's): it takes those not locked now.
        const { rows: locked } = await tx.query<{ id: string }>(
          kind === 'any'
            ? prepared('claim_lock_free_endpoints', lockFreeClaimEndpoints, [
                where.map((w) => w.endpoint_id),
                claimLockId,
              ])
            : prepared('claim_lock_endpoints', lockClaimEndpoints, [where.map((w) => w.endpoint_id), claimLockId]),
        );
        if (locked.length === 0) return [];
        const lockedIds = locked.map((e) => e.id);
        const { rows } = await tx.query<InHand>(
          prepared('claim_deliveries', claimDeliveries, [...chooseDueNow(kind, lockedIds), leaseMs(webhooks)]),
        );
        return rows;
      });
      counts.claimed += claimed.length;
      for (const d of claimed) launch(d);
      // Full (or its noisy part full): more may be due.
      return claimed.length === free || claimed.filter((d) => !d.answering).length >= noisyClaimMax;
    });
  }
  /**
   * A claim loop. Two run: `answering` claims deliveries to endpoints that answer only, so a
   * healthy delivery is claimed while `any` looks at hundreds of hanging endpoints for the
   * unreserved slots and waits for their recordings (issue 50: in bench:webhooks' outage such a
   * claim took up to 50-140 ms, and a healthy delivery waited behind it).
   */
  async function claimLoop(kind: ClaimKind) {
    let pollNow = new AbortController();
    wakers.set(kind, () => pollNow.abort());
    const step = async (state: LoopState): Promise<LoopState> => {
      if (stopped.signal.aborted) return { name: 'stopped' };
      switch (state.name) {
        case 'polling': {
          if (kind === 'answering') answeringStarved = slots.free() === 0;
          // `any` adds nothing to `answering` while no unreserved slot is free
          if (slots.free() === 0 || (kind === 'any' && slots.unreservedFree() === 0)) return { name: 'waiting' };
          let full: boolean;
          try {
            full = await claim(kind);
          } catch (err) {
            const failures = state.failures + 1;
            // logged by one loop: all fail together when PostgreSQL is away
            if (kind === laneLoops[webhooks.lane][0])
              log.warn(
                { err, failures, retryInMs: backoffMs(schedules.dependencyWait, failures) },
                'webhook poll failed; retrying',
              );
            return { name: 'backingOff', failures };
          }
          if (state.failures > 0 && kind === laneLoops[webhooks.lane][0])
            log.info({ failures: state.failures }, 'webhook polling works again');
          return full ? { name: 'polling', failures: 0 } : { name: 'waiting' };
        }
        case 'waiting': {
          await pause(webhooks.pollIntervalMs, AbortSignal.any([stopped.signal, pollNow.signal]));
          if (pollNow.signal.aborted) pollNow = new AbortController();
          return { name: 'polling', failures: 0 };
        }
        case 'backingOff': {
          await pause(backoffMs(schedules.dependencyWait, state.failures), stopped.signal);
          return { name: 'polling', failures: state.failures };
        }
        case 'stopped':
          return state;
      }
    };
    let state: LoopState = { name: 'polling', failures: 0 };
    while (state.name !== 'stopped') state = await step(state);
    wakers.delete(kind);
  }

  type InHand = Claimed & { answering?: boolean; chained?: boolean };

  /**
   * Runs a claimed delivery in a slot; when its success's recording began the endpoint's next
   * delivery (chained), that one runs in the same slot, and so on: the slot comes free only when a
   * chain ends. Then it wakes `any`, and `answering` only when that may claim more for it: the
   * slot held deliveries to an endpoint that answers (claimed so, or one succeeded), its tenant was at its
   * share, or no slot was free at answering's last poll. In an outage hundreds of noisy slots come
   * free a second, and each woke the answering loop to look at every endpoint again (issue 50).
   */
  function launch(d: InHand) {
    let answered = d.answering ?? false;
    const inSlot = slots.take<InHand>(d, async (x) => {
      try {
        return await attempt(x, () => (answered = true));
      } catch (err) {
        // Not recorded (an error other than PostgreSQL being away, or stopping while it was): the
        // lease expires and the delivery is tried again.
        log.error({ err, eventId: x.event_id, endpointId: x.endpoint_id }, 'webhook attempt could not be recorded');
        return null;
      }
    });
    void inSlot.finally(() => {
      const tenantWasFull = slots.tenantHeld(d.tenant_id) + 1 >= slots.tenantShare;
      wake(answered || tenantWasFull || answeringStarved ? claimKinds : ['any']);
    });
  }

  /**
   * One attempt, its lease kept alive until its outcome is recorded (attempt.ts); reported once
   * recorded; `onSucceeded` told of a success. Returns the endpoint's next delivery when the
   * recording chained one (begun already).
   */
  async function attempt(d: InHand, onSucceeded: () => void): Promise<InHand | null> {
    const deps: AttemptDeps = {
      ...(d.answering || d.chained ? lanes.answering : lanes.other),
      webhooks,
      leaseMs: leaseMs(webhooks),
      agents,
      log,
      stopped: stopped.signal,
    };
    const made = await attemptDelivery(d, deps, d.chained);
    if (!made) return null;
    if (made.result.outcome === 'Succeeded') onSucceeded();
    else slots.markFailed(d.id);
    report(made.delivery, made.result, made.recorded);
    const next = made.recorded.outcome === 'succeeded' ? made.recorded.next : undefined;
    if (!next || next.endpoint_id !== d.endpoint_id) return null;
    counts.chained++;
    return { ...next, answering: true, chained: true };
  }

  /** Logs and counts a recorded outcome (after its commit: a record tried again must not count twice). */
  function report(d: Claimed, result: AttemptResult, recorded: Recorded) {
    metrics.webhookAttempt(recorded.outcome);
    const context = { eventId: d.event_id, endpointId: d.endpoint_id, attempt: d.attempt_count };
    const attemptFields = { outcome: result.outcome, statusCode: result.statusCode, latencyMs: result.latencyMs };
    switch (recorded.outcome) {
      case 'succeeded':
        log.debug({ ...context, ...attemptFields }, 'webhook attempt');
        if (recorded.breakerClosed) {
          metrics.webhookBreaker('closed');
          log.info(context, 'webhook endpoint breaker closed: its probe succeeded');
        }
        return;
      case 'lease_lost':
        log.warn(context, 'webhook lease lost before the outcome was recorded');
        return;
      case 'retry_scheduled':
        log.warn(
          { ...context, ...attemptFields, error: result.error, nextAttemptInMs: recorded.retryInMs },
          'webhook attempt',
        );
        break;
      case 'gave_up':
        log.warn({ ...context, ...attemptFields, error: result.error, nextAttemptInMs: null }, 'webhook attempt');
        if (recorded.disabled)
          log.error(
            { ...context, clientId: recorded.disabled.client_id, url: d.url, reason: recorded.disabled.reason },
            'webhook endpoint disabled: it kept failing',
          );
        break;
    }
    if (recorded.breakerOpened) {
      metrics.webhookBreaker('opened');
      log.warn(
        { ...context, probeInMs: recorded.breakerOpened.waitMs, opensInARow: recorded.breakerOpened.trips },
        'webhook endpoint breaker opened: nothing is sent to it until its probe',
      );
    }
  }

  const loops = Promise.all(laneLoops[webhooks.lane].map(claimLoop));

  return {
    listening: () => listener?.listening() ?? false,
    slotsHeld: () => ({ now: webhooks.concurrency - slots.free(), peak: slots.peakHeld() }),
    counts: () => ({ ...counts }),
    async stop() {
      stopped.abort();
      stopCountingRenewals();
      await Promise.all([loops, listener?.close()]);
      await slots.settled(); // in-flight attempts finish (each bounded by the timeout)
      agents.destroy(); // the idle kept-alive connections
      await Promise.all([claimPool.end(), lanes.answering.end(), lanes.other.end(), answeringPool.end()]);
    },
  };
}

/** The runner's `webhooks` kind (WORKERS=webhooks): one dispatcher per process, and the event pruner. */
export const webhookDispatcher: PollingWorker = {
  name: 'webhooks',
  polling: true,
  start: async (deps) => {
    const dispatcher = startDispatcher({
      ...deps,
      webhooks: deps.config.webhooks,
      databaseUrl: deps.config.database.url,
    });
    const pruner = startEventPruner({ ...deps, events: deps.config.events, databaseUrl: deps.config.database.url });
    return {
      async stop() {
        await Promise.all([dispatcher.stop(), pruner.stop()]);
      },
    };
  },
};
