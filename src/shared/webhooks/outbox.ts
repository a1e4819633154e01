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

/**
 * The field of each type's data that names the record the event is about: its id is written to
 * webhook_events.subject_id (migration 0032), by which `admin trace` finds a record's events.
 */
export const subjectKeys = {
  'import_job.completed': 'importJobId',
  'import_job.completed_with_errors': 'importJobId',
  'import_job.failed': 'importJobId',
  'field_job.created': 'fieldJobId',
  'work_order.materials_recorded': 'materialUsageId',
  'appointment_request.status_changed': 'appointmentRequestId',
} as const satisfies { [T in WebhookEventType]: keyof WebhookEventData[T] };

/** The id of the record an event is about, as webhook_events.subject_id holds it (text; import job ids as digits). */
export const subjectOf = <T extends WebhookEventType>(type: T, data: WebhookEventData[T]): string =>
  String((data as Record<string, unknown>)[subjectKeys[type]]);

export type WebhookEventInput<T extends WebhookEventType> = {
  tenantId: string;
  clientId: string;
  type: T;
  data: WebhookEventData[T];
};

/**
 * Inserts the event and one Pending delivery per Active endpoint of the client subscribed to its
 * type: one statement, in the caller's transaction, so the event commits with the state change
 * that raised it or not at all. The dispatcher picks the deliveries up from there. subject_id ($8)
 * names the record the event is about (subjectOf); the previous release's insert leaves it NULL.
 */
export const insertEventSql = `
  WITH event AS (
    INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at, subject_id)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id
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
    subjectOf(input.type, input.data),
  ]);
  return { eventId: envelope.id, deliveries: result.rowCount ?? 0 };
}
