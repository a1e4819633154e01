import { randomUUID } from 'node:crypto';
import { notifyDeliveriesDue } from './endpoint-deliveries.js';
import type { Tx } from './outbox.js';
import { generateWebhookSecret } from './signing.js';
import { iso } from '../iso-time.js';

// Webhook endpoints and their deliveries, as operators (admin CLI) and clients (the API, only
// their own: EndpointRef.clientId) manage them. Secrets leave this module only when created or
// rotated; listings never carry them.

export type EndpointSummary = {
  endpointId: string;
  clientId: string;
  url: string;
  events: string[];
  status: 'Active' | 'Disabled';
  disabledReason: string | null;
  disabledAt: string | null;
  consecutiveFailures: number;
  maxInFlight: number;
  breaker: EndpointBreaker;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  secretRotatedAt: string | null;
  previousSecretValidUntil: string | null;
  deliveries: { pending: number; delivering: number; succeeded: number; failed: number };
  failedAttempts: number;
  createdAt: string;
};

/**
 * The endpoint's circuit breaker (workers/webhooks/breaker.ts): Closed, Open (nothing is sent
 * until nextProbeAt) or HalfOpen (one delivery at a time, the probe, is sent).
 */
export type EndpointBreaker = {
  state: 'Closed' | 'Open' | 'HalfOpen';
  openedAt: string | null;
  nextProbeAt: string | null;
  opensInARow: number;
};

/**
 * Attempts in flight to one endpoint: the operator's default where the client set none, never
 * above the operator's maximum (WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_ENDPOINT_CONCURRENCY_MAX).
 */
export type InFlightBounds = { endpointConcurrency: number; endpointConcurrencyMax: number };

/** The events column: ['*'] is every type. */
export const eventsOut = (types: string[]) => (types.length === 1 && types[0] === '*' ? ['all'] : types);

/** A new endpoint of the client (of that tenant: the caller knows it, from authentication or a lookup). */
export async function createEndpoint(
  db: Tx,
  input: { tenantId: string; clientId: string; url: string; eventTypes: string[] | '*'; maxInFlight?: number | null },
): Promise<{ endpointId: string; secret: string; createdAt: string }> {
  const secret = generateWebhookSecret();
  const { rows } = await db.query(
    `INSERT INTO webhook_endpoints (id, tenant_id, client_id, url, event_types, secret, max_in_flight)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
    [
      randomUUID(),
      input.tenantId,
      input.clientId,
      input.url,
      input.eventTypes === '*' ? ['*'] : input.eventTypes,
      secret,
      input.maxInFlight ?? null,
    ],
  );
  return { endpointId: rows[0].id, secret, createdAt: iso(rows[0].created_at)! };
}

/** An endpoint by id; with clientId, only when it is that client's (the API), else any (operators). */
export type EndpointRef = { endpointId: string; clientId?: string | null };

const refWhere = 'ep.id = $1 AND ($2::uuid IS NULL OR ep.client_id = $2)';
const refValues = (ref: EndpointRef) => [ref.endpointId, ref.clientId ?? null];

/**
 * The most deliveries of one status, and failed attempts, an endpoint's summary counts (issue 49):
 * counted per endpoint on every list, by index ((endpoint_id, status); 0028's partial index of
 * failed attempts), so a busy endpoint's retention window costs a list no more than this.
 */
export const endpointCountLimit = 10_000;

const deliveriesIn = (status: string) =>
  `(SELECT count(*)::int FROM (SELECT FROM webhook_deliveries d WHERE d.endpoint_id = ep.id AND d.status = '${status}'
                               LIMIT ${endpointCountLimit}) counted)`;

const summaryColumns = `
  ep.id, ep.client_id, ep.url, ep.event_types, ep.status, ep.disabled_reason, ep.disabled_at,
  ep.consecutive_failures, ep.last_success_at, ep.last_failure_at, ep.secret_rotated_at, ep.max_in_flight,
  ep.breaker_opened_at, ep.breaker_probe_at, ep.breaker_trips, ep.breaker_probe_at <= now() AS probe_due,
  CASE WHEN ep.previous_secret_expires_at > now() THEN ep.previous_secret_expires_at END AS previous_until,
  ep.created_at,
  ${deliveriesIn('Pending')} AS pending,
  ${deliveriesIn('Delivering')} AS delivering,
  ${deliveriesIn('Succeeded')} AS succeeded,
  ${deliveriesIn('Failed')} AS failed,
  (SELECT count(*)::int FROM (SELECT FROM webhook_attempts a WHERE a.endpoint_id = ep.id AND a.outcome <> 'Succeeded'
                               LIMIT ${endpointCountLimit}) failed) AS failed_attempts`;

const summaryOf =
  (bounds: InFlightBounds) =>
  (r: any): EndpointSummary => ({
    endpointId: r.id,
    clientId: r.client_id,
    url: r.url,
    events: eventsOut(r.event_types),
    status: r.status,
    disabledReason: r.disabled_reason,
    disabledAt: iso(r.disabled_at),
    consecutiveFailures: r.consecutive_failures,
    maxInFlight: Math.min(r.max_in_flight ?? bounds.endpointConcurrency, bounds.endpointConcurrencyMax),
    breaker: {
      state: r.breaker_opened_at === null ? 'Closed' : r.probe_due ? 'HalfOpen' : 'Open',
      openedAt: iso(r.breaker_opened_at),
      nextProbeAt: iso(r.breaker_probe_at),
      opensInARow: r.breaker_trips,
    },
    lastSuccessAt: iso(r.last_success_at),
    lastFailureAt: iso(r.last_failure_at),
    secretRotatedAt: iso(r.secret_rotated_at),
    previousSecretValidUntil: iso(r.previous_until),
    deliveries: { pending: r.pending, delivering: r.delivering, succeeded: r.succeeded, failed: r.failed },
    failedAttempts: r.failed_attempts,
    createdAt: iso(r.created_at)!,
  });

export async function listEndpoints(db: Tx, clientId: string, bounds: InFlightBounds): Promise<EndpointSummary[]> {
  const { rows } = await db.query(
    `SELECT ${summaryColumns} FROM webhook_endpoints ep WHERE ep.client_id = $1 ORDER BY ep.created_at, ep.id`,
    [clientId],
  );
  return rows.map(summaryOf(bounds));
}

export async function getEndpoint(db: Tx, ref: EndpointRef, bounds: InFlightBounds): Promise<EndpointSummary | null> {
  const { rows } = await db.query(
    `SELECT ${summaryColumns} FROM webhook_endpoints ep WHERE ${refWhere}`,
    refValues(ref),
  );
  return rows[0] ? summaryOf(bounds)(rows[0]) : null;
}

export const countEndpoints = async (db: Tx, clientId: string): Promise<number> =>
  (await db.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE client_id = $1', [clientId])).rows[0].n;

export async function findEndpoint(db: Tx, ref: EndpointRef) {
  const { rows } = await db.query(
    `SELECT ep.id, ep.tenant_id, ep.client_id, ep.url, ep.event_types, ep.status FROM webhook_endpoints ep
      WHERE ${refWhere}`,
    refValues(ref),
  );
  return (
    (rows[0] as
      | { id: string; tenant_id: string; client_id: string; url: string; event_types: string[]; status: string }
      | undefined) ?? null
  );
}

/**
 * Changes the URL and/or the subscribed types (null: unchanged) and/or the endpoint's attempts in
 * flight (undefined: unchanged; null: the operator's default); false when there is no such endpoint.
 */
export async function updateEndpoint(
  db: Tx,
  ref: EndpointRef,
  change: { url: string | null; eventTypes: string[] | '*' | null; maxInFlight?: number | null },
): Promise<boolean> {
  const types = change.eventTypes === '*' ? ['*'] : change.eventTypes;
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints ep SET url = coalesce($3, url), event_types = coalesce($4, event_types),
            max_in_flight = CASE WHEN $5 THEN $6::integer ELSE max_in_flight END, updated_at = now()
      WHERE ${refWhere}`,
    [...refValues(ref), change.url, types, change.maxInFlight !== undefined, change.maxInFlight ?? null],
  );
  return rowCount === 1;
}

/**
 * Deletes the deliveries of these endpoints or events with their attempts (in a transaction). A
 * dispatcher may be recording an attempt meanwhile: the deliveries are locked first (an attempt's
 * insert waits for them, then finds them gone), and each delete reads what committed before it,
 * so no attempt is left pointing at a deleted delivery.
 */
export async function deleteDeliveries(tx: Tx, column: 'endpoint_id' | 'event_id', ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await lockDeliveries(tx, column, ids);
  await tx.query(`DELETE FROM webhook_attempts WHERE ${column} = ANY($1)`, [ids]);
  await tx.query(`DELETE FROM webhook_deliveries WHERE ${column} = ANY($1)`, [ids]);
}

// In id order, as the dispatcher locks the deliveries whose outcomes it records together
// (workers/webhooks/sql.ts): two writers of several of the same deliveries never deadlock.
const lockDeliveries = (tx: Tx, column: 'endpoint_id' | 'event_id', ids: string[]) =>
  tx.query(`SELECT 1 FROM webhook_deliveries WHERE ${column} = ANY($1) ORDER BY id FOR UPDATE`, [ids]);

/**
 * Deletes the endpoint with its deliveries and their attempts (its events stay: other endpoints
 * and the feed), in the caller's transaction. Locks in the order of a dispatcher recording an
 * attempt (the delivery, then the endpoint): the other order deadlocked with it. The endpoint's
 * lock then holds off new deliveries to it, so the deliveries' delete leaves none for the
 * endpoint's delete to trip on.
 */
export async function deleteEndpoint(tx: Tx, ref: EndpointRef): Promise<boolean> {
  const found = await tx.query(`SELECT ep.id FROM webhook_endpoints ep WHERE ${refWhere}`, refValues(ref));
  const id = found.rows[0]?.id as string | undefined;
  if (!id) return false;
  await lockDeliveries(tx, 'endpoint_id', [id]);
  const locked = await tx.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [id]);
  if (locked.rowCount === 0) return false; // deleted meanwhile by another request
  await deleteDeliveries(tx, 'endpoint_id', [id]);
  await tx.query('DELETE FROM webhook_endpoints WHERE id = $1', [id]);
  return true;
}

/** New current secret; the old one keeps signing until now + overlapMs (0: not at all). */
export async function rotateSecret(db: Tx, ref: EndpointRef, overlapMs: number) {
  const secret = generateWebhookSecret();
  const { rows } = await db.query(
    `UPDATE webhook_endpoints ep
        SET previous_secret = CASE WHEN $4 > 0 THEN secret END,
            previous_secret_expires_at = CASE WHEN $4 > 0 THEN now() + $4 * interval '1 millisecond' END,
            secret = $3, secret_rotated_at = now(), updated_at = now()
      WHERE ${refWhere}
      RETURNING id, secret_rotated_at, previous_secret_expires_at`,
    [...refValues(ref), secret, overlapMs],
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

export async function setEndpointStatus(db: Tx, ref: EndpointRef, status: 'Active' | 'Disabled', reason: string) {
  const { rows } = await db.query(
    status === 'Active'
      ? `UPDATE webhook_endpoints ep SET status = 'Active', disabled_reason = NULL, disabled_at = NULL,
                consecutive_failures = 0, breaker_opened_at = NULL, breaker_probe_at = NULL, breaker_trips = 0,
                recent_failures_mask = 0, recent_attempts = 0, updated_at = now()
          WHERE ${refWhere} RETURNING id, status, disabled_reason, disabled_at`
      : `UPDATE webhook_endpoints ep SET status = 'Disabled', disabled_reason = $3,
                disabled_at = coalesce(disabled_at, now()), updated_at = now()
          WHERE ${refWhere} RETURNING id, status, disabled_reason, disabled_at`,
    status === 'Active' ? refValues(ref) : [...refValues(ref), reason],
  );
  const r = rows[0];
  if (r && status === 'Active') await notifyDeliveriesDue(db); // its waiting deliveries are due again
  return r
    ? {
        endpointId: r.id as string,
        status: r.status as string,
        disabledReason: r.disabled_reason,
        disabledAt: iso(r.disabled_at),
      }
    : null;
}
