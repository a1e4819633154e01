import type { Config } from '../../shared/config.js';
import { isPostgresUnavailable } from '../../shared/db/errors.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { retrying, schedules } from '../../shared/retry.js';
import { serviceVersion } from '../../shared/version.js';
import { signWebhook } from '../../shared/webhooks/signing.js';
import { leaseKeeper } from './lease.js';
import { postWebhook, type AttemptResult, type WebhookAgents } from './post.js';
import { recordOutcome, type Claimed, type Recorded, type RecordSettings } from './record.js';
import { beginAttempt } from './sql.js';

export type AttemptDeps = {
  pool: Pool;
  webhooks: Pick<Config['webhooks'], 'timeoutMs' | 'allowPrivateTargets'>;
  leaseMs: number;
  agents: WebhookAgents;
  settings: RecordSettings;
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
 */
export async function attemptDelivery(d: Claimed, deps: AttemptDeps): Promise<Made | null> {
  const { pool, webhooks, log } = deps;
  const context = { eventId: d.event_id, endpointId: d.endpoint_id };
  const lease = leaseKeeper(pool, deps.leaseMs, log);
  lease.hold(d.id, d.lease_token);
  try {
    // The lease began at the claim; restart it now so it covers the attempt and not whatever
    // delayed us since (a starved process, a slow answer). Not ours any more: send nothing.
    let begun;
    try {
      begun = await pool.query<Pick<Claimed, 'attempt_count' | 'round_attempts'>>(beginAttempt, [
        d.id,
        d.lease_token,
        deps.leaseMs,
      ]);
    } catch (err) {
      log.warn(
        { err, ...context },
        'webhook attempt not begun (PostgreSQL unreachable?); tried again when its lease expires',
      );
      return null;
    }
    if (begun.rowCount === 0) {
      log.warn(context, 'webhook lease lost before the attempt began: not sent (another dispatcher has it)');
      return null;
    }
    const delivery: Claimed = { ...d, ...begun.rows[0]! };
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
    // it is retried while PostgreSQL is unreachable, the lease renewed meanwhile. Stopping
    // meanwhile leaves the lease to expire (the delivery is sent again: at least once).
    const recorded = await retrying(
      schedules.dependencyWait,
      () => recordOutcome(pool, deps.settings, delivery, startedAt, result),
      {
        retriable: isPostgresUnavailable,
        signal: deps.stopped,
        onRetry: (err, failures, retryInMs) =>
          log.warn(
            { err, ...context, outcome: result.outcome, failures, retryInMs },
            'webhook attempt made but not recorded yet (PostgreSQL unavailable); retrying',
          ),
      },
    );
    return { delivery, result, recorded };
  } finally {
    lease.release(d.id);
  }
}
