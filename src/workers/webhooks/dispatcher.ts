import type { Config } from '../../shared/config.js';
import { isConnectionError } from '../../shared/db/errors.js';
import { inTransaction, type Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { backoffMs, listedDelayMs, pause, schedules } from '../../shared/retry.js';
import { serviceVersion } from '../../shared/version.js';
import { signWebhook } from '../../shared/webhooks/signing.js';
import type { PollingWorker } from '../start-workers.js';
import { noWorkerMetrics, type WebhookOutcome, type WorkerMetrics } from '../worker-metrics.js';
import { postWebhook, type AttemptResult } from './post.js';
import { startEventPruner } from './prune.js';
import {
  beginAttempt,
  claimDeliveries,
  disableEndpoint,
  endpointFailed,
  endpointSucceeded,
  insertAttempt,
  markGaveUp,
  markSucceeded,
  scheduleRetry,
} from './sql.js';

type Claimed = {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempt_count: number;
  round_attempts: number;
  lease_token: string;
  type: string;
  body: string;
  url: string;
  secret: string;
  previous_secret: string | null;
};

export type DispatcherDeps = { webhooks: Config['webhooks']; logger: Logger; pool: Pool; metrics?: WorkerMetrics };

/** How long a lease lasts from the attempt's start: its timeout plus time to record its outcome. */
export const leaseMs = (webhooks: Pick<Config['webhooks'], 'timeoutMs'>) => webhooks.timeoutMs + 5000;

/**
 * The webhook dispatcher: polls PostgreSQL for due deliveries, claims them with a lease (so any
 * number of dispatcher processes share the work, and one that dies leaves leases that expire),
 * POSTs each signed event with a per-attempt timeout and records every attempt. Failures are
 * retried on the schedule; after the last one the delivery is Failed and its endpoint Disabled.
 * PostgreSQL going away stops nothing: polls back off and go on, outcomes wait to be recorded.
 */
export function startDispatcher({ webhooks, logger, pool, metrics = noWorkerMetrics }: DispatcherDeps): {
  stop(): Promise<void>;
} {
  const log = logger.child({ worker: 'webhooks' });
  const inFlight = new Set<Promise<void>>();
  const held = new Set<string>(); // ids of the deliveries in flight here
  let stopping = false;
  let wake: (() => void) | null = null;
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });
  // Backing off from PostgreSQL: only stop() cuts it short, not a slot coming free.
  const stopped = new AbortController();
  const retryInMs = (failures: number) => backoffMs(schedules.dependencyWait, failures);
  const backOff = (failures: number) => pause(retryInMs(failures), stopped.signal);

  async function record(d: Claimed, startedAt: Date, result: AttemptResult): Promise<void> {
    const delay = result.outcome === 'Succeeded' ? null : listedDelayMs(webhooks.retryScheduleMs, d.round_attempts);
    const gaveUp = result.outcome !== 'Succeeded' && delay === null;
    // Counted once the transaction committed: a record tried again must not count twice.
    const recorded = await inTransaction(pool, async (tx): Promise<WebhookOutcome> => {
      await tx.query(insertAttempt, [
        d.id,
        d.event_id,
        d.endpoint_id,
        d.attempt_count,
        result.outcome,
        result.statusCode,
        result.latencyMs,
        result.error?.slice(0, 1000) ?? null,
        result.responseSnippet,
        startedAt,
      ]);
      const error = result.error?.slice(0, 1000) ?? null;
      const updated =
        result.outcome === 'Succeeded'
          ? await tx.query(markSucceeded, [d.id, d.lease_token])
          : gaveUp
            ? await tx.query(markGaveUp, [d.id, d.lease_token, error])
            : await tx.query(scheduleRetry, [d.id, d.lease_token, delay, error]);
      if (updated.rowCount === 0) {
        // Our lease expired and another dispatcher claimed the delivery: it decides now.
        log.warn(
          { eventId: d.event_id, endpointId: d.endpoint_id },
          'webhook lease lost before the outcome was recorded',
        );
        return 'lease_lost';
      }
      if (result.outcome === 'Succeeded') {
        await tx.query(endpointSucceeded, [d.endpoint_id]);
        return 'succeeded';
      }
      await tx.query(endpointFailed, [d.endpoint_id]);
      if (gaveUp) {
        const attempts = d.round_attempts;
        const reason =
          `delivery of ${d.event_id} (${d.type}) failed ${attempts} attempt${attempts === 1 ? '' : 's'}; ` +
          `last: ${result.error ?? result.outcome}`;
        const disabled = await tx.query(disableEndpoint, [d.endpoint_id, reason.slice(0, 1000)]);
        if (disabled.rowCount)
          log.error(
            {
              endpointId: d.endpoint_id,
              clientId: disabled.rows[0].client_id,
              url: d.url,
              eventId: d.event_id,
              reason,
            },
            'webhook endpoint disabled: it kept failing',
          );
        return 'gave_up';
      }
      return 'retry_scheduled';
    });
    metrics.webhookAttempt(recorded);
    const level = result.outcome === 'Succeeded' ? 'debug' : 'warn';
    log[level](
      {
        eventId: d.event_id,
        endpointId: d.endpoint_id,
        attempt: d.attempt_count,
        outcome: result.outcome,
        statusCode: result.statusCode,
        latencyMs: result.latencyMs,
        error: result.error,
        nextAttemptInMs: delay,
      },
      'webhook attempt',
    );
  }

  /**
   * Records an outcome, retrying while PostgreSQL is unreachable: the POST was made, and once the
   * record lands (lease token still ours) nothing is sent again. Gives up only on another kind of
   * error or when stopping; then the lease expires and the delivery is tried again.
   */
  async function recordUntilDone(d: Claimed, startedAt: Date, result: AttemptResult): Promise<void> {
    for (let failures = 1; ; failures++) {
      try {
        await record(d, startedAt, result);
        return;
      } catch (err) {
        if (!isConnectionError(err) || stopping) throw err;
        log.warn(
          {
            err,
            eventId: d.event_id,
            endpointId: d.endpoint_id,
            outcome: result.outcome,
            retryInMs: retryInMs(failures),
          },
          'webhook attempt made but not recorded yet (PostgreSQL unreachable); retrying',
        );
        await backOff(failures);
      }
    }
  }

  async function attempt(d: Claimed): Promise<void> {
    // The lease began at the claim; restart it now so it covers the attempt and not whatever
    // delayed us since (a starved process, a slow answer). Not ours any more: send nothing.
    let begun;
    try {
      begun = await pool.query(beginAttempt, [d.id, d.lease_token, leaseMs(webhooks)]);
    } catch (err) {
      log.warn(
        { err, eventId: d.event_id, endpointId: d.endpoint_id },
        'webhook attempt not begun (PostgreSQL unreachable?); tried again when its lease expires',
      );
      return;
    }
    if (begun.rowCount === 0) {
      log.warn(
        { eventId: d.event_id, endpointId: d.endpoint_id },
        'webhook lease lost before the attempt began: not sent (another dispatcher has it)',
      );
      return;
    }
    const startedAt = new Date();
    const secrets = d.previous_secret ? [d.secret, d.previous_secret] : [d.secret];
    const headers = {
      ...signWebhook(d.event_id, startedAt, d.body, secrets),
      'user-agent': `connect-integration-webhooks/${serviceVersion}`,
    };
    const result = await postWebhook(d.url, headers, d.body, {
      timeoutMs: webhooks.timeoutMs,
      allowPrivate: webhooks.allowPrivateTargets,
    });
    await recordUntilDone(d, startedAt, result);
  }

  function launch(d: Claimed) {
    const p: Promise<void> = attempt(d)
      .catch((err: unknown) =>
        // Not recorded (an error other than PostgreSQL being away, or stopping while it was): the
        // lease expires and the delivery is tried again.
        log.error({ err, eventId: d.event_id, endpointId: d.endpoint_id }, 'webhook attempt could not be recorded'),
      )
      .finally(() => {
        inFlight.delete(p);
        held.delete(d.id);
        wake?.();
      });
    inFlight.add(p);
    held.add(d.id);
  }

  let failures = 0; // consecutive failed polls
  const loop = (async () => {
    while (!stopping) {
      // Only as many as there are free slots now: each claimed delivery is attempted at once.
      const free = webhooks.concurrency - inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const { rows } = await pool.query<Claimed>(claimDeliveries, [free, leaseMs(webhooks), [...held]]);
          claimed = rows.length;
          for (const row of rows) launch(row);
          if (failures > 0) log.info({ failures }, 'webhook polling works again');
          failures = 0;
        } catch (err) {
          failures++;
          log.warn({ err, failures, retryInMs: retryInMs(failures) }, 'webhook poll failed; retrying');
          await backOff(failures);
          continue;
        }
      }
      if (stopping) break;
      // A full claim means more may be due: poll again at once once a slot is free.
      if (claimed > 0 && claimed === free && inFlight.size < webhooks.concurrency) continue;
      await nap(webhooks.pollIntervalMs);
    }
  })();

  return {
    async stop() {
      stopping = true;
      stopped.abort();
      wake?.();
      await loop;
      await Promise.allSettled([...inFlight]); // in-flight attempts finish (each bounded by the timeout)
    },
  };
}

/** The runner's `webhooks` kind (WORKERS=webhooks): one dispatcher per process, and the event pruner. */
export const webhookDispatcher: PollingWorker = {
  name: 'webhooks',
  polling: true,
  start: async (deps) => {
    const dispatcher = startDispatcher({ ...deps, webhooks: deps.config.webhooks });
    const pruner = startEventPruner({ ...deps, events: deps.config.events });
    return {
      async stop() {
        await Promise.all([dispatcher.stop(), pruner.stop()]);
      },
    };
  },
};
