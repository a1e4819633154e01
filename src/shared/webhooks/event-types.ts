import { z } from 'zod';
import { workOrderMaterialUsageSchema } from '../materials/usage-record.js';

// The webhook events, version 1. Types are `<resource>.<verb>` and stable: a change that is not
// backwards compatible (a field removed or retyped) gets a new version, never a silent change;
// fields may be added. These schemas are documented in the OpenAPI `webhooks` section.

export const webhookEventVersion = 1;

export const webhookEventTypes = [
  'import_job.completed',
  'import_job.completed_with_errors',
  'import_job.failed',
  'field_job.created',
  'work_order.materials_recorded',
  'appointment_request.status_changed',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

export const isWebhookEventType = (s: string): s is WebhookEventType =>
  (webhookEventTypes as readonly string[]).includes(s);

/**
 * Subscribed types as stored: '*' for "all" alone (every type, present and future), else the
 * named types in catalogue order; null when a name is unknown or "all" is not alone.
 */
export function subscriptionOf(names: readonly string[]): WebhookEventType[] | '*' | null {
  const unique = [...new Set(names)];
  if (unique.length === 1 && unique[0] === 'all') return '*';
  if (unique.length === 0 || !unique.every(isWebhookEventType)) return null;
  return webhookEventTypes.filter((t) => unique.includes(t));
}

/** Event id: `evt_` + a ULID; also the webhook-id header, the same on every retry and replay. */
export const webhookEventIdPattern = /^evt_[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

const count = () => z.number().int().min(0);

export const importJobEventDataSchema = z
  .strictObject({
    importJobId: z.number().int().min(1).meta({ format: 'int64' }),
    kind: z.enum(['Single', 'Batch']),
    status: z.enum(['Completed', 'CompletedWithErrors', 'Failed']).meta({ description: 'The final status.' }),
    sourceSystem: z.string(),
    externalBatchId: z.string().nullable(),
    counts: z
      .strictObject({
        received: count(),
        accepted: count(),
        rejected: count(),
        applied: count(),
        failed: count(),
      })
      .meta({ id: 'WebhookImportJobCounts' }),
    failureReason: z.string().nullable().meta({ description: 'Why chunks failed (Failed, or CompletedWithErrors).' }),
    createdAt: z.iso.datetime(),
    completedAt: z.iso.datetime(),
  })
  .meta({
    id: 'WebhookImportJobData',
    description: 'The import job as it reached its final status (see GET /api/v1/import-jobs/{id} for its errors).',
  });

export const fieldJobCreatedDataSchema = z
  .strictObject({
    fieldJobId: z.uuid(),
    jobNumber: z.string().meta({ description: 'Per tenant, e.g. J-000123.' }),
    externalId: z.string().meta({ description: "The caller's id of the job." }),
    status: z.string().meta({ description: 'Created.' }),
    workOrderId: z.number().int().nullable().meta({
      description: "The job's work order (external work-order id = externalId); null if none could be linked.",
    }),
    jobType: z.string(),
    title: z.string(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'WebhookFieldJobCreatedData', description: 'The field job the jobs worker materialised.' });

export const materialsRecordedDataSchema = workOrderMaterialUsageSchema
  .extend({
    status: z.enum(['Applied']).meta({ description: 'Applied: the stock movements are booked.' }),
    appliedAt: z.iso.datetime(),
  })
  .meta({
    id: 'WebhookMaterialsRecordedData',
    description:
      'A work-order material usage whose stock movements the materials worker booked: the usage as ' +
      'GET …/material-usages answers it (WorkOrderMaterialUsageDto).',
  });

export const appointmentStatusChangedDataSchema = z
  .strictObject({
    appointmentRequestId: z.string().meta({ description: 'apr_ + ULID.' }),
    externalReference: z.string(),
    fromStatus: z.string().meta({ description: 'The status before the change.' }),
    toStatus: z.string().meta({ description: 'The status after the change.' }),
    reason: z.string().nullable().meta({ description: 'Set for Rejected, Failed and Cancelled.' }),
    actor: z.enum(['client', 'system', 'back-office']),
    changedAt: z.iso.datetime(),
  })
  .meta({
    id: 'WebhookAppointmentStatusChangedData',
    description: 'One status change of an appointment request (one event per history entry after Submitted).',
  });

export const webhookEventDataSchemas = {
  'import_job.completed': importJobEventDataSchema,
  'import_job.completed_with_errors': importJobEventDataSchema,
  'import_job.failed': importJobEventDataSchema,
  'field_job.created': fieldJobCreatedDataSchema,
  'work_order.materials_recorded': materialsRecordedDataSchema,
  'appointment_request.status_changed': appointmentStatusChangedDataSchema,
} as const satisfies Record<WebhookEventType, z.ZodType>;

export type WebhookEventData = { [T in WebhookEventType]: z.infer<(typeof webhookEventDataSchemas)[T]> };

export const webhookEventDescriptions: Record<WebhookEventType, string> = {
  'import_job.completed': 'An import job finished and every accepted target was applied.',
  'import_job.completed_with_errors':
    'An import job finished, but some targets were rejected at the edge or failed in the worker.',
  'import_job.failed': 'An import job finished and nothing was applied (its chunks were dead-lettered).',
  'field_job.created': 'The jobs worker materialised a field job and its work order (after POST /api/connect/jobs).',
  'work_order.materials_recorded': 'The materials worker booked a recorded material usage as stock movements.',
  'appointment_request.status_changed':
    'An appointment request changed status (worker validation, back office, client cancel); from, to and reason.',
};

const schemaName = (type: WebhookEventType) =>
  type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('') + 'Event';

/** The HTTP body the receiver gets: one envelope for every type. */
export function webhookEnvelopeSchema<T extends WebhookEventType>(type: T) {
  return z
    .strictObject({
      id: z.string().regex(webhookEventIdPattern).meta({ description: 'evt_ + ULID; equals the webhook-id header.' }),
      type: z.literal(type),
      version: z.literal(webhookEventVersion),
      timestamp: z.iso.datetime().meta({ description: 'When the state change happened (UTC).' }),
      tenantId: z.uuid(),
      clientId: z.uuid().meta({ description: 'The Integration Client the event belongs to (its endpoints get it).' }),
      data: webhookEventDataSchemas[type],
    })
    .meta({ id: schemaName(type), description: webhookEventDescriptions[type] });
}

export type WebhookEnvelope<T extends WebhookEventType = WebhookEventType> = {
  id: string;
  type: T;
  version: typeof webhookEventVersion;
  timestamp: string;
  tenantId: string;
  clientId: string;
  data: WebhookEventData[T];
};
