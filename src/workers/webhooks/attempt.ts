import type { Config } from '../../shared/config.js';
import { isLostRace, isPostgresUnavailable } from '../../shared/db/errors.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { retrying, schedules } from '../../shared/retry.js';
import { serviceVersion } from '../../shared/version.js';
import { signWebhook } from '../../shared/webhooks/signing.js';
import { leaseKeeper } from './lease.js';
import { postWebhook, type AttemptResult, type WebhookAgents } from './post.js';
import type { Claimed, Outcome, Recorded } from './record.js';

/** Times an outcome's recording is tried again after losing a race (a deadlock) before it is given up. */
export const recordRacesRetried = 5;

/** A begun attempt's counts (beginAttempts), or null when the lease is not this dispatcher's any more. */
export type Begun = Pick<Claimed, 'attempt_count' | 'round_attempts'> | null;

export type AttemptDeps = {
  /** Whose options the lease keeper's connection takes (lease.ts). */
  pool: Pool;
  /** Begins the attempt (sql.ts beginAttempts), batched with others' beginnings (dispatcher.ts). */
  begin: (d: Claimed) => Promise<Begun>;
  /** Records the outcome (record.ts), batched with others' outcomes (dispatcher.ts). */
  record: (outcome: Outcome) => Promise<Recorded>;
  webhooks: Pick<Config['webhooks'], 'timeoutMs' | 'allowPrivateTargets'>;
  leaseMs: number;
  agents: WebhookAgents;
  log: Logger;
  /** The dispatcher stopping: an outcome still waiting for PostgreSQL is given up (its lease expires). */
  stopped: AbortSignal;
};

/** What an attempt did: the delivery with its counts as begun, what the receiver answered, what was recorded. */
export type Made = { delivery: Claimed; result: AttemptResult; recorded: Recorded };

/**
 * One attempt of a claimed delivery, from the claim to the recorded outcome, under a lease kept
 * alive all along (lease.ts). It begins only while the lease is still this dispatcher's, and the
 * beginning is what counts it (attempt_count, round_attempts): a claim that is never sent (lease
 * lost first, a crash before the POST) uses up no attempt. Null when it was not sent.
 *
 * `chained`: the delivery was begun already, by the statement that recorded its endpoint's
 * previous success (sql.ts recordSuccesses: its lease, token and counts set there), so it is
 * sent at once, without a beginning of its own.
 */
export async function attemptDelivery(d: Claimed, deps: AttemptDeps, chained = false): Promise<Made | null> {
  const { pool, webhooks, log } = deps;
  const context = { eventId: d.event_id, endpointId: d.endpoint_id };
  const lease = leaseKeeper(pool, deps.leaseMs, log);
  lease.hold(d.id, d.lease_token);
  try {
    // The lease began at the claim; restart it now so it covers the attempt and not whatever
    // delayed us since (a starved process, a slow answer). Not ours any more: send nothing.
    let begun: Begun;
    try {
      begun = chained ? { attempt_count: d.attempt_count, round_attempts: d.round_attempts } : await deps.begin(d);
    } catch (err) {
      log.warn(
        { err, ...context },
        'webhook attempt not begun (PostgreSQL unreachable?); tried again when its lease expires',
      );
      return null;
    }
    if (!begun) {
      log.warn(context, 'webhook lease lost before the attempt began: not sent (another dispatcher has it)');
      return null;
    }
    const delivery: Claimed = { ...d, ...begun };
    const startedAt = new Date();
    const secrets = d.previous_secret ? [d.secret, d.previous_secret] : [d.secret];
    const headers = {
      ...signWebhook(d.event_id, startedAt, d.body, secrets),
      'user-agent': `connect-integration-webhooks/${serviceVersion}`,
    };
    const result = await postWebhook(d.url, headers, d.body, {
      timeoutMs: webhooks.timeoutMs,
      allowPrivate: webhooks.allowPrivateTargets,
      agents: deps.agents,
    });
    // The POST was made: once its record lands (lease token still ours) nothing is sent again, so
    // it is retried while PostgreSQL is unreachable, the lease renewed meanwhile, and after a
    // deadlock (a few times: concurrent recordings of one endpoint can deadlock, seen with two
    // dispatchers, issue 50; given up, the delivery was sent again when its lease ran out).
    // Stopping meanwhile leaves the lease to expire (the delivery is sent again: at least once).
    let racesLost = 0;
    const recorded = await retrying(schedules.dependencyWait, () => deps.record({ delivery, startedAt, result }), {
      retriable: (err) => isPostgresUnavailable(err) || (isLostRace(err) && ++racesLost <= recordRacesRetried),
      signal: deps.stopped,
      onRetry: (err, failures, retryInMs) =>
        log.warn(
          { err, ...context, outcome: result.outcome, failures, retryInMs },
          'webhook attempt made but not recorded yet; retrying',
        ),
    });
    return { delivery, result, recorded };
  } finally {
    lease.release(d.id);
  }
}
