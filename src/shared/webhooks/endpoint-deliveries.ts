import { newWebhookEventId, type Tx } from './outbox.js';
import { webhookEventVersion } from './event-types.js';
import { iso } from '../iso-time.js';

// Deliveries of webhook endpoints: attempts made, replays, test events. Callers check that the
// endpoint and the event are the caller's (see endpoints.ts, EndpointRef).

/**
 * Notified (empty payload) in a transaction that makes deliveries due without inserting an event
 * (whose own NOTIFY, channel webhook_event, wakes the dispatcher): a replay, an endpoint enabled
 * again. Delivered at its commit, so the dispatcher it wakes (workers/webhooks/wake.ts) finds them.
 */
export const deliveryChannel = 'webhook_delivery';

/** Wakes the dispatchers: in db's transaction (delivered at its commit), or after the statement that committed. */
export const notifyDeliveriesDue = async (db: Tx) => {
  await db.query('SELECT pg_notify($1, $2)', [deliveryChannel, '']);
};

/** The type of test events: sent to one endpoint on request, never to others, never in the feed. */
export const testEventType = 'webhook.test';

// An attempt of the delivery in flight now: its dispatcher holds the lease (and renews it).
const inFlight = `(webhook_deliveries.status = 'Delivering' AND webhook_deliveries.lease_until >= now())`;

/**
 * Queues a delivery again: Pending, due now, a new round of the retry schedule. One whose attempt
 * is in flight keeps its lease and is only marked replay_requested: the dispatcher recording that
 * attempt queues it again then (workers/webhooks/record.ts). Clearing the lease instead let the
 * claim send it again beside the open attempt, past the endpoint's maxInFlight (issue 50).
 */
const requeue = `
  ON CONFLICT (event_id, endpoint_id) DO UPDATE
     SET replay_requested = ${inFlight},
         status = CASE WHEN ${inFlight} THEN webhook_deliveries.status ELSE 'Pending' END,
         next_attempt_at = CASE WHEN ${inFlight} THEN webhook_deliveries.next_attempt_at ELSE now() END,
         round_attempts = CASE WHEN ${inFlight} THEN webhook_deliveries.round_attempts ELSE 0 END,
         lease_until = CASE WHEN ${inFlight} THEN webhook_deliveries.lease_until END,
         lease_token = CASE WHEN ${inFlight} THEN webhook_deliveries.lease_token END,
         completed_at = NULL, updated_at = now()`;

/**
 * Attempts newest first, of an endpoint and/or an event, below `beforeId` (keyset: the next page of
 * a cursor). The page's ids come from the endpoint's or event's index alone before the rows are
 * read, as the import-job list's do (src/gateway/import-jobs/store.ts says why).
 */
export async function listAttempts(
  db: Tx,
  by: { endpointId?: string; eventId?: string; beforeId?: string },
  limit: number,
) {
  const { rows } = await db.query(
    `SELECT a.id, a.event_id, e.type, a.endpoint_id, a.attempt, a.outcome, a.status_code, a.latency_ms, a.error,
            a.response_snippet, a.started_at, a.finished_at, d.status AS delivery_status
       FROM webhook_attempts a
       JOIN webhook_events e ON e.id = a.event_id
       JOIN webhook_deliveries d ON d.id = a.delivery_id
      WHERE a.id IN (SELECT id FROM webhook_attempts
                      WHERE ($1::uuid IS NULL OR endpoint_id = $1) AND ($2::text IS NULL OR event_id = $2)
                        AND ($4::bigint IS NULL OR id < $4)
                      ORDER BY id DESC LIMIT $3)
      ORDER BY a.id DESC`,
    [by.endpointId ?? null, by.eventId ?? null, limit, by.beforeId ?? null],
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

/** An event by id; with clientId, only when it is that client's. */
export async function findEvent(db: Tx, eventId: string, clientId: string | null = null) {
  const { rows } = await db.query(
    'SELECT id, tenant_id, client_id, type FROM webhook_events WHERE id = $1 AND ($2::uuid IS NULL OR client_id = $2)',
    [eventId, clientId],
  );
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
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id)
     SELECT $1, ep.id, ep.tenant_id FROM webhook_endpoints ep
      WHERE ep.client_id = $2
        AND ${endpointId ? 'ep.id = $3::uuid' : `ep.status = 'Active' AND (ep.event_types @> ARRAY[$3::text] OR ep.event_types @> '{*}')`}
     ${requeue}
     RETURNING endpoint_id, (SELECT url FROM webhook_endpoints WHERE id = endpoint_id) AS url,
               (SELECT status FROM webhook_endpoints WHERE id = endpoint_id) AS endpoint_status`,
    [event.id, event.client_id, endpointId ?? event.type],
  );
  if (rows.length > 0) await notifyDeliveriesDue(db);
  return rows.map((r) => ({
    endpointId: r.endpoint_id as string,
    url: r.url as string,
    endpointStatus: r.endpoint_status as string,
  }));
}

/**
 * Queues again, for one endpoint, every event of its client recorded since `since` whose delivery
 * to it Failed (gave up), and every event it missed (raised while it was disabled, after it was
 * created, of a type it is subscribed to now). Returns how many were queued.
 */
export async function replayFailedSince(db: Tx, endpointId: string, since: Date): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id)
     SELECT e.id, ep.id, ep.tenant_id FROM webhook_endpoints ep JOIN webhook_events e ON e.client_id = ep.client_id
      WHERE ep.id = $1 AND e.created_at >= $2
        AND (EXISTS (SELECT 1 FROM webhook_deliveries d
                      WHERE d.event_id = e.id AND d.endpoint_id = ep.id AND d.status = 'Failed')
             OR (NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.endpoint_id = ep.id)
                 AND e.created_at >= ep.created_at AND e.type <> $3
                 AND (ep.event_types @> ARRAY[e.type] OR ep.event_types @> '{*}')))
     ${requeue}`,
    [endpointId, since, testEventType],
  );
  if (rowCount) await notifyDeliveriesDue(db);
  return rowCount ?? 0;
}

/**
 * Records a `webhook.test` event of the endpoint's client and queues it for that endpoint alone.
 * Its subject_id is the endpoint (what its data names), so that only the previous release's
 * events have none (migration 0032).
 */
export async function sendTestEvent(db: Tx, endpoint: { id: string; tenant_id: string; client_id: string }) {
  const now = new Date();
  const envelope = {
    id: newWebhookEventId(now.getTime()),
    type: testEventType,
    version: webhookEventVersion,
    timestamp: now.toISOString(),
    tenantId: endpoint.tenant_id,
    clientId: endpoint.client_id,
    data: { endpointId: endpoint.id, message: 'A test event, sent on request. It changes nothing.' },
  };
  await db.query(
    `WITH event AS (
       INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at, subject_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $9) RETURNING id
     )
     INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id) SELECT id, $8, $2 FROM event`,
    [
      envelope.id,
      endpoint.tenant_id,
      endpoint.client_id,
      testEventType,
      webhookEventVersion,
      JSON.stringify(envelope),
      now,
      endpoint.id,
      endpoint.id,
    ],
  );
  return envelope;
}
