import { ulid } from '../appointments/ids.js';
import type { PoolClient } from '../db/pool.js';
import {
  webhookEventVersion,
  type WebhookEnvelope,
  type WebhookEventData,
  type WebhookEventType,
} from './event-types.js';

export type Tx = Pick<PoolClient, 'query'>;

export const newWebhookEventId = (now?: number) => `evt_${ulid(now)}`;

export type WebhookEventInput<T extends WebhookEventType> = {
  tenantId: string;
  clientId: string;
  type: T;
  data: WebhookEventData[T];
};

/**
 * Inserts the event and one Pending delivery per Active endpoint of the client subscribed to its
 * type: one statement, in the caller's transaction, so the event commits with the state change
 * that raised it or not at all. The dispatcher picks the deliveries up from there.
 */
export const insertEventSql = `
  WITH event AS (
    INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
  )
  INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id)
  SELECT event.id, ep.id, ep.tenant_id
    FROM event JOIN webhook_endpoints ep
      ON ep.client_id = $3 AND ep.status = 'Active' AND (ep.event_types @> ARRAY[$4::text] OR ep.event_types @> '{*}')`;

export async function recordWebhookEvent<T extends WebhookEventType>(
  tx: Tx,
  input: WebhookEventInput<T>,
): Promise<{ eventId: string; deliveries: number }> {
  const now = new Date();
  const envelope: WebhookEnvelope<T> = {
    id: newWebhookEventId(now.getTime()),
    type: input.type,
    version: webhookEventVersion,
    timestamp: now.toISOString(),
    tenantId: input.tenantId,
    clientId: input.clientId,
    data: input.data,
  };
  const result = await tx.query(insertEventSql, [
    envelope.id,
    input.tenantId,
    input.clientId,
    input.type,
    webhookEventVersion,
    JSON.stringify(envelope),
    now,
  ]);
  return { eventId: envelope.id, deliveries: result.rowCount ?? 0 };
}
