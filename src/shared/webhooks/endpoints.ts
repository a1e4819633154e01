import { randomUUID } from 'node:crypto';
import type { Tx } from './outbox.js';
import { generateWebhookSecret } from './signing.js';

// Webhook endpoints and their deliveries, as operators manage them (admin CLI). Secrets leave
// this module only when created or rotated; listings never carry them.

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

export type EndpointSummary = {
  endpointId: string;
  clientId: string;
  url: string;
  events: string[];
  status: 'Active' | 'Disabled';
  disabledReason: string | null;
  disabledAt: string | null;
  consecutiveFailures: number;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  secretRotatedAt: string | null;
  previousSecretValidUntil: string | null;
  deliveries: { pending: number; delivering: number; succeeded: number; failed: number };
  failedAttempts: number;
  createdAt: string;
};

/** The events column: ['*'] is every type. */
export const eventsOut = (types: string[]) => (types.length === 1 && types[0] === '*' ? ['all'] : types);

export async function createEndpoint(
  db: Tx,
  input: { clientId: string; url: string; eventTypes: string[] | '*' },
): Promise<{ endpointId: string; tenantId: string; secret: string; createdAt: string } | null> {
  const secret = generateWebhookSecret();
  const { rows } = await db.query(
    `INSERT INTO webhook_endpoints (id, tenant_id, client_id, url, event_types, secret)
     SELECT $1, c.tenant_id, c.id, $3, $4, $5 FROM integration_clients c WHERE c.id = $2
     RETURNING id, tenant_id, created_at`,
    [randomUUID(), input.clientId, input.url, input.eventTypes === '*' ? ['*'] : input.eventTypes, secret],
  );
  const r = rows[0];
  return r ? { endpointId: r.id, tenantId: r.tenant_id, secret, createdAt: iso(r.created_at)! } : null;
}

export async function listEndpoints(db: Tx, clientId: string): Promise<EndpointSummary[]> {
  const { rows } = await db.query(
    `SELECT ep.id, ep.client_id, ep.url, ep.event_types, ep.status, ep.disabled_reason, ep.disabled_at,
            ep.consecutive_failures, ep.last_success_at, ep.last_failure_at, ep.secret_rotated_at,
            CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret_expires_at END AS previous_until,
            ep.created_at,
            (SELECT count(*) FILTER (WHERE d.status = 'Pending')::int FROM webhook_deliveries d WHERE d.endpoint_id = ep.id) AS pending,
            (SELECT count(*) FILTER (WHERE d.status = 'Delivering')::int FROM webhook_deliveries d WHERE d.endpoint_id = ep.id) AS delivering,
            (SELECT count(*) FILTER (WHERE d.status = 'Succeeded')::int FROM webhook_deliveries d WHERE d.endpoint_id = ep.id) AS succeeded,
            (SELECT count(*) FILTER (WHERE d.status = 'Failed')::int FROM webhook_deliveries d WHERE d.endpoint_id = ep.id) AS failed,
            (SELECT count(*)::int FROM webhook_attempts a WHERE a.endpoint_id = ep.id AND a.outcome <> 'Succeeded') AS failed_attempts
       FROM webhook_endpoints ep WHERE ep.client_id = $1 ORDER BY ep.created_at, ep.id`,
    [clientId],
  );
  return rows.map((r) => ({
    endpointId: r.id,
    clientId: r.client_id,
    url: r.url,
    events: eventsOut(r.event_types),
    status: r.status,
    disabledReason: r.disabled_reason,
    disabledAt: iso(r.disabled_at),
    consecutiveFailures: r.consecutive_failures,
    lastSuccessAt: iso(r.last_success_at),
    lastFailureAt: iso(r.last_failure_at),
    secretRotatedAt: iso(r.secret_rotated_at),
    previousSecretValidUntil: iso(r.previous_until),
    deliveries: { pending: r.pending, delivering: r.delivering, succeeded: r.succeeded, failed: r.failed },
    failedAttempts: r.failed_attempts,
    createdAt: iso(r.created_at)!,
  }));
}

export async function findEndpoint(db: Tx, endpointId: string) {
  const { rows } = await db.query(
    'SELECT id, tenant_id, client_id, url, event_types, status FROM webhook_endpoints WHERE id = $1',
    [endpointId],
  );
  return (
    (rows[0] as
      | { id: string; tenant_id: string; client_id: string; url: string; event_types: string[]; status: string }
      | undefined) ?? null
  );
}

/** New current secret; the old one keeps signing until now + overlapMs (0: not at all). */
export async function rotateSecret(db: Tx, endpointId: string, overlapMs: number) {
  const secret = generateWebhookSecret();
  const { rows } = await db.query(
    `UPDATE webhook_endpoints
        SET previous_secret = CASE WHEN $3 > 0 THEN secret END,
            previous_secret_expires_at = CASE WHEN $3 > 0 THEN now() + $3 * interval '1 millisecond' END,
            secret = $2, secret_rotated_at = now(), updated_at = now()
      WHERE id = $1
      RETURNING id, secret_rotated_at, previous_secret_expires_at`,
    [endpointId, secret, overlapMs],
  );
  const r = rows[0];
  return r
    ? {
        endpointId: r.id as string,
        secret,
        rotatedAt: iso(r.secret_rotated_at)!,
        previousSecretValidUntil: iso(r.previous_secret_expires_at),
      }
    : null;
}

export async function setEndpointStatus(db: Tx, endpointId: string, status: 'Active' | 'Disabled', reason: string) {
  const { rows } = await db.query(
    status === 'Active'
      ? `UPDATE webhook_endpoints SET status = 'Active', disabled_reason = NULL, disabled_at = NULL,
                consecutive_failures = 0, updated_at = now()
          WHERE id = $1 RETURNING id, status, disabled_reason, disabled_at`
      : `UPDATE webhook_endpoints SET status = 'Disabled', disabled_reason = $2,
                disabled_at = coalesce(disabled_at, now()), updated_at = now()
          WHERE id = $1 RETURNING id, status, disabled_reason, disabled_at`,
    status === 'Active' ? [endpointId] : [endpointId, reason],
  );
  const r = rows[0];
  return r
    ? {
        endpointId: r.id as string,
        status: r.status as string,
        disabledReason: r.disabled_reason,
        disabledAt: iso(r.disabled_at),
      }
    : null;
}

export async function listAttempts(db: Tx, by: { endpointId: string } | { eventId: string }, limit: number) {
  const [where, value] = 'endpointId' in by ? ['a.endpoint_id = $1', by.endpointId] : ['a.event_id = $1', by.eventId];
  const { rows } = await db.query(
    `SELECT a.id, a.event_id, e.type, a.endpoint_id, a.attempt, a.outcome, a.status_code, a.latency_ms, a.error,
            a.response_snippet, a.started_at, a.finished_at, d.status AS delivery_status
       FROM webhook_attempts a
       JOIN webhook_events e ON e.id = a.event_id
       JOIN webhook_deliveries d ON d.id = a.delivery_id
      WHERE ${where} ORDER BY a.id DESC LIMIT $2`,
    [value, limit],
  );
  return rows.map((r) => ({
    attemptId: Number(r.id),
    eventId: r.event_id as string,
    type: r.type as string,
    endpointId: r.endpoint_id as string,
    attempt: r.attempt as number,
    outcome: r.outcome as string,
    statusCode: r.status_code as number | null,
    latencyMs: r.latency_ms as number,
    error: r.error as string | null,
    responseSnippet: r.response_snippet as string | null,
    startedAt: iso(r.started_at)!,
    finishedAt: iso(r.finished_at)!,
    deliveryStatus: r.delivery_status as string,
  }));
}

export async function findEvent(db: Tx, eventId: string) {
  const { rows } = await db.query('SELECT id, tenant_id, client_id, type FROM webhook_events WHERE id = $1', [eventId]);
  return (rows[0] as { id: string; tenant_id: string; client_id: string; type: string } | undefined) ?? null;
}

/**
 * Queues the event again (same event id, so the same webhook-id and body) for one endpoint of its
 * client, or, without one, for every Active endpoint of the client subscribed to its type. A new
 * round of the retry schedule starts; earlier attempts stay recorded.
 */
export async function replayEvent(
  db: Tx,
  event: { id: string; client_id: string; type: string },
  endpointId: string | null,
) {
  const { rows } = await db.query(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id)
     SELECT $1, ep.id FROM webhook_endpoints ep
      WHERE ep.client_id = $2
        AND ${endpointId ? 'ep.id = $3::uuid' : `ep.status = 'Active' AND (ep.event_types @> ARRAY[$3::text] OR ep.event_types @> '{*}')`}
     ON CONFLICT (event_id, endpoint_id) DO UPDATE
        SET status = 'Pending', next_attempt_at = now(), round_attempts = 0, lease_until = NULL, lease_token = NULL,
            completed_at = NULL, updated_at = now()
     RETURNING endpoint_id, (SELECT url FROM webhook_endpoints WHERE id = endpoint_id) AS url,
               (SELECT status FROM webhook_endpoints WHERE id = endpoint_id) AS endpoint_status`,
    [event.id, event.client_id, endpointId ?? event.type],
  );
  return rows.map((r) => ({
    endpointId: r.endpoint_id as string,
    url: r.url as string,
    endpointStatus: r.endpoint_status as string,
  }));
}
