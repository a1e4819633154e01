import type { WebhookEnvelope, WebhookEventData, WebhookEventType } from './event-types.js';

// One example body per webhook event type, shown in the OpenAPI document's `webhooks` section
// (typed by the event schemas; test/unit/openapi-examples.test.ts parses each with its schema).

const importJob = (status: 'Completed' | 'CompletedWithErrors' | 'Failed', applied: number, failed: number) => ({
  importJobId: 1842,
  kind: 'Batch' as const,
  status,
  sourceSystem: 'sap-erp',
  externalBatchId: 'BATCH-2026-11-23-01',
  counts: { received: 3, accepted: 2, rejected: 1, applied, failed },
  failureReason: failed > 0 ? 'chunk 1 of 1 dead-lettered: the database refused the row' : null,
  createdAt: '2026-11-23T07:15:02.118Z',
  completedAt: '2026-11-23T07:15:03.402Z',
});

const data: WebhookEventData = {
  'import_job.completed': {
    ...importJob('Completed', 2, 0),
    counts: { received: 2, accepted: 2, rejected: 0, applied: 2, failed: 0 },
  },
  'import_job.completed_with_errors': importJob('CompletedWithErrors', 2, 0),
  'import_job.failed': importJob('Failed', 0, 2),
  'field_job.created': {
    fieldJobId: '0b6d1f0e-8a3c-4f51-9d2e-7c4b5a691f20',
    jobNumber: 'J-000317',
    externalId: 'WO-2026-00917',
    status: 'Created',
    workOrderId: 917,
    jobType: 'Maintenance',
    title: 'Annual boiler service',
    createdAt: '2026-11-23T07:30:00.412Z',
  },
  'work_order.materials_recorded': {
    materialUsageId: 'e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b',
    workOrderId: 917,
    externalWorkOrderId: 'WO-2026-00917',
    externalEventId: 'EVT-WO-2026-00917-1',
    status: 'Applied',
    failureReason: null,
    inventoryLocationId: 'a4d1c3e2-9b8f-4a67-b5c0-1e2d3f4a5b6c',
    locationName: 'Van 204',
    externalLocationCode: 'VAN-204',
    usedAt: '2026-11-23T10:12:00.000Z',
    recordedAt: '2026-11-23T10:12:04.871Z',
    appliedAt: '2026-11-23T10:12:05.030Z',
    materials: [
      {
        inventoryItemId: '7c2e9a41-5f3b-4d6e-8a10-2b9c4e7d1f35',
        sku: 'FLT-200',
        name: 'Boiler filter 200',
        quantity: 2,
        unitOfMeasure: 'pcs',
      },
    ],
  },
  'appointment_request.status_changed': {
    appointmentRequestId: 'apr_01KAP7Z3M4N5Q6R7S8T9V0W1X2',
    externalReference: 'PORTAL-88213',
    fromStatus: 'Validated',
    toStatus: 'PendingReview',
    reason: null,
    actor: 'system',
    changedAt: '2026-11-23T09:30:41.911Z',
  },
};

export function webhookExample<T extends WebhookEventType>(type: T): WebhookEnvelope<T> {
  return {
    id: 'evt_01KAP80Q2W3E4R5T6Y7V8J9K0P',
    type,
    version: 1,
    timestamp: '2026-11-23T07:15:03.402Z',
    tenantId: '5b0e4f5e-2f4c-4d8a-9a51-3c2f0d9b7e11',
    clientId: 'c7a3e2f1-4b5d-4c6e-9f70-8a1b2c3d4e5f',
    data: data[type],
  };
}
