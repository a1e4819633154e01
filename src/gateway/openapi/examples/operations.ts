// Examples of every request and success body in the OpenAPI document, by operationId, shown by
// generated clients and API browsers. test/unit/openapi-examples.test.ts checks each against the
// route's own zod schema (refinements included); Redocly's lint checks them against the document.

import { selfServiceExamples } from './self-service.js';

export type OperationExamples = {
  request?: unknown;
  /** By status: the body of that answer. */
  responses: Record<number, unknown>;
};

const at = (time: string) => `2026-11-23T${time}Z`;

const address = {
  line1: 'Hauptstraße 12',
  line2: null,
  postalCode: '10115',
  city: 'Berlin',
  region: null,
  countryCode: 'DE',
};
const coordinates = { latitude: 52.5321, longitude: 13.3849 };
const window = { start: at('08:00:00.000'), end: at('12:00:00.000') };

const target = {
  externalId: 'SITE-4711',
  name: 'Boiler room, Hauptstraße 12',
  address,
  coordinates,
  timeWindows: [window],
  serviceDurationMinutes: 45,
  priority: 2,
  tags: ['boiler', 'annual-service'],
  metadata: { contractId: 'C-2291', floor: 1 },
};

const queuedImportJob = (kind: 'Single' | 'Batch') => ({
  importJobId: 1842,
  kind,
  status: 'Queued',
  sourceSystem: 'sap-erp',
  externalBatchId: kind === 'Batch' ? 'BATCH-2026-11-23-01' : null,
  counts: {
    received: kind === 'Batch' ? 3 : 1,
    accepted: kind === 'Batch' ? 3 : 1,
    rejected: 0,
    applied: 0,
    failed: 0,
  },
  errors: [],
  errorsOmitted: 0,
  failureReason: null,
  createdAt: at('07:15:02.118'),
  updatedAt: at('07:15:02.118'),
  startedAt: null,
  completedAt: null,
});

const completedImportJob = {
  ...queuedImportJob('Batch'),
  status: 'Completed',
  counts: { received: 3, accepted: 3, rejected: 0, applied: 3, failed: 0 },
  updatedAt: at('07:15:03.402'),
  startedAt: at('07:15:02.610'),
  completedAt: at('07:15:03.402'),
};

/** An earlier batch whose third target was refused at the edge (partial acceptance). */
const importJobWithErrors = {
  ...completedImportJob,
  importJobId: 1839,
  status: 'CompletedWithErrors',
  externalBatchId: 'BATCH-2026-11-22-04',
  counts: { received: 3, accepted: 2, rejected: 1, applied: 2, failed: 0 },
  errors: [{ index: 2, externalId: 'SITE-4690', field: 'address', message: 'give an address, coordinates or both' }],
  createdAt: at('06:02:10.005'),
  updatedAt: at('06:02:11.230'),
  startedAt: at('06:02:10.480'),
  completedAt: at('06:02:11.230'),
};

const createJob = {
  externalId: 'WO-2026-00917',
  title: 'Annual boiler service',
  description: 'Service the gas boiler and replace the filter.',
  jobType: 'Maintenance',
  priority: 'Normal',
  customer: {
    name: 'Müller Hausverwaltung GmbH',
    externalId: 'CUST-318',
    contact: { name: 'Anna Müller', phone: '+49301234567', email: 'anna.mueller@example.com' },
  },
  site: { address, coordinates },
  requestedTimeWindow: { start: at('08:00:00.000'), end: at('12:00:00.000') },
  expectedDurationMinutes: 90,
  importTargetRef: { sourceSystem: 'sap-erp', externalId: 'SITE-4711' },
  metadata: { costCentre: 'CC-42' },
};

const createdJob = (created: boolean) => ({
  requestId: '2f1d9c7a-6b3e-4f08-9a25-d1c4e7b8a603',
  correlationId: 'erp-run-2026-11-23-0715',
  externalId: 'WO-2026-00917',
  fieldJobId: '0b6d1f0e-8a3c-4f51-9d2e-7c4b5a691f20',
  jobNumber: 'J-000317',
  status: 'Created',
  created,
  idempotentReplay: !created,
});

const jobExamples = { request: createJob, responses: { 201: createdJob(true), 200: createdJob(false) } };

const routeSuggestion = {
  id: '3f8a6c2e-1b4d-4e7f-a0c9-5d2b8e1f6a73',
  importJobId: 1842,
  name: 'Berlin north, Monday',
  status: 'Draft',
  createdAt: at('07:20:11.504'),
  date: '2026-11-23',
  timeZone: 'Europe/Berlin',
  vehicles: 1,
  averageSpeedKmh: 40,
  routes: [
    {
      vehicle: 1,
      stops: [
        {
          sequence: 1,
          externalId: 'SITE-4711',
          coordinates,
          arrival: '09:00',
          departure: '09:45',
          waitMinutes: 0,
          legDistanceKm: 3.2,
        },
        {
          sequence: 2,
          externalId: 'SITE-4712',
          coordinates: { latitude: 52.5502, longitude: 13.4101 },
          arrival: '09:58',
          departure: '10:28',
          waitMinutes: 0,
          legDistanceKm: 2.6,
        },
      ],
      distanceKm: 9.1,
      durationMinutes: 109,
      start: '08:55',
      end: '10:44',
    },
  ],
  unplaced: [{ externalId: 'SITE-4713', reason: 'NoCoordinates' }],
  totalDistanceKm: 9.1,
  totalDurationMinutes: 109,
  summary: { targets: 3, placed: 2, unplaced: 1 },
};

const routeSuggestionRequest = {
  name: 'Berlin north, Monday',
  date: '2026-11-23',
  timeZone: 'Europe/Berlin',
  depot: { latitude: 52.52, longitude: 13.405 },
  endDepot: null,
  vehicles: 1,
  shift: { start: '08:00', end: '17:00' },
  maxStopsPerRoute: 12,
  averageSpeedKmh: 40,
};

const itemId = '7c2e9a41-5f3b-4d6e-8a10-2b9c4e7d1f35';
const locationId = 'a4d1c3e2-9b8f-4a67-b5c0-1e2d3f4a5b6c';

const materialLine = {
  inventoryItemId: itemId,
  sku: 'FLT-200',
  name: 'Boiler filter 200 mm',
  quantity: 2,
  unitOfMeasure: 'pcs',
};

const materialUsageRequest = {
  externalEventId: 'EVT-WO-2026-00917-1',
  inventoryLocationId: locationId,
  externalLocationCode: null,
  usedAt: at('10:12:00.000'),
  materials: [
    { inventoryItemId: itemId, sku: null, quantity: 2, unitOfMeasure: 'pcs' },
    { inventoryItemId: null, sku: 'GASKET-15', quantity: 1, unitOfMeasure: null },
  ],
};

const materialUsageResponse = {
  materialUsageId: 'e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b',
  workOrderId: 917,
  externalWorkOrderId: 'WO-2026-00917',
  inventoryLocationId: locationId,
  usedAt: at('10:12:00.000'),
  status: 'Pending',
  materials: [materialLine],
  idempotency: { externalEventId: 'EVT-WO-2026-00917-1', wasAlreadyProcessed: false },
};

const appointmentRequest = {
  externalReference: 'PORTAL-88213',
  serviceType: 'repair',
  priority: 'high',
  customer: { name: 'Jonas Weber', externalId: 'CUST-9921', organization: null },
  contact: { name: 'Jonas Weber', phone: '+491705550123', email: 'jonas.weber@example.com' },
  location: { address, coordinates },
  preferredTimeWindows: [{ start: '2026-11-25T08:00:00.000Z', end: '2026-11-25T12:00:00.000Z' }],
  description: 'Radiator in the living room stays cold.',
  metadata: { portalUser: 'jweber' },
};

const appointmentId = 'apr_01KAP7Z3M4N5Q6R7S8T9V0W1X2';

const appointmentRecord = {
  id: appointmentId,
  ...appointmentRequest,
  status: 'Submitted',
  statusReason: null,
  cancellation: null,
  createdAt: at('09:30:41.220'),
  updatedAt: at('09:30:41.220'),
};

const dependency = (latencyMs: number) => ({ status: 'Up', latencyMs, error: null });

export const operationExamples: Record<string, OperationExamples> = {
  ...selfServiceExamples,
  getIntegrationHealth: {
    responses: {
      200: {
        status: 'Healthy',
        version: '1.4.0',
        time: at('07:00:00.000'),
        checks: { postgres: dependency(2), kafka: dependency(4) },
      },
    },
  },
  listInventoryItems: {
    responses: {
      200: [
        {
          inventoryItemId: itemId,
          name: 'Boiler filter 200 mm',
          sku: 'FLT-200',
          categoryName: 'Filters',
          unitOfMeasure: 'pcs',
          trackStock: true,
          defaultQuantity: 1,
          lowStockThreshold: 10,
        },
      ],
    },
  },
  listInventoryLocations: {
    responses: {
      200: [
        {
          inventoryLocationId: locationId,
          name: 'Van B-FS 204',
          externalCode: 'VAN-204',
          locationType: 'Vehicle',
          isDefault: false,
        },
      ],
    },
  },
  listInventoryBalances: {
    responses: {
      200: [
        {
          inventoryItemId: itemId,
          itemName: 'Boiler filter 200 mm',
          sku: 'FLT-200',
          inventoryLocationId: locationId,
          locationName: 'Van B-FS 204',
          externalLocationCode: 'VAN-204',
          quantityOnHand: 6,
          unitOfMeasure: 'pcs',
          isLowStock: true,
          isNegative: false,
        },
      ],
    },
  },
  pushInboundTarget: {
    request: { sourceSystem: 'sap-erp', ...target },
    responses: { 200: { ...queuedImportJob('Single'), idempotentReplay: false } },
  },
  pushInboundTargetBatch: {
    request: {
      sourceSystem: 'sap-erp',
      externalBatchId: 'BATCH-2026-11-23-01',
      targets: [
        target,
        { externalId: 'SITE-4712', name: 'Roof unit', coordinates: { latitude: 52.5502, longitude: 13.4101 } },
        { externalId: 'SITE-4713', name: 'Basement meter', address: { ...address, line1: 'Hauptstraße 14' } },
      ],
    },
    responses: { 200: { ...queuedImportJob('Batch'), idempotentReplay: false } },
  },
  listImportJobs: {
    responses: {
      200: {
        items: [completedImportJob, importJobWithErrors],
        total: 2,
        totalIsExact: true,
        skip: 0,
        take: 50,
        nextCursor: null,
      },
    },
  },
  getImportJob: { responses: { 200: completedImportJob } },
  createJob: jobExamples,
  createJobUnversioned: jobExamples,
  createImportJobRouteSuggestion: { request: routeSuggestionRequest, responses: { 200: routeSuggestion } },
  getRouteSuggestion: { responses: { 200: routeSuggestion } },
  listWorkOrderMaterialUsages: {
    responses: {
      200: [
        {
          materialUsageId: materialUsageResponse.materialUsageId,
          workOrderId: 917,
          externalWorkOrderId: 'WO-2026-00917',
          externalEventId: 'EVT-WO-2026-00917-1',
          status: 'Applied',
          failureReason: null,
          inventoryLocationId: locationId,
          locationName: 'Van B-FS 204',
          externalLocationCode: 'VAN-204',
          usedAt: at('10:12:00.000'),
          recordedAt: at('10:12:04.871'),
          appliedAt: at('10:12:05.030'),
          materials: [materialLine],
        },
      ],
    },
  },
  recordWorkOrderMaterialUsage: { request: materialUsageRequest, responses: { 200: materialUsageResponse } },
  recordWorkOrderMaterialUsageByExternalId: {
    request: materialUsageRequest,
    responses: { 200: materialUsageResponse },
  },
  issueAccessToken: {
    request: { grant_type: 'client_credentials', scope: 'appointments.read appointments.write' },
    responses: {
      200: {
        access_token: 'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6ImsxIn0.eyJzdWIiOiIuLi4ifQ.c2lnbmF0dXJl',
        token_type: 'Bearer',
        expires_in: 900,
        scope: 'appointments.read appointments.write',
      },
      400: { error: 'invalid_scope', error_description: 'scope inventory.read is not granted to this client' },
      401: { error: 'invalid_client', error_description: 'client authentication failed' },
      429: { error: 'slow_down', error_description: 'too many token requests; retry after 12 s' },
    },
  },
  getJsonWebKeySet: {
    responses: {
      200: {
        keys: [
          {
            kty: 'EC',
            crv: 'P-256',
            x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
            y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
            kid: 'k1',
            alg: 'ES256',
            use: 'sig',
          },
        ],
      },
    },
  },
  submitAppointmentRequest: {
    request: appointmentRequest,
    responses: { 202: appointmentRecord, 200: appointmentRecord },
  },
  getAppointmentRequest: { responses: { 200: { ...appointmentRecord, status: 'PendingReview' } } },
  getAppointmentRequestStatus: {
    responses: {
      200: {
        id: appointmentId,
        status: 'PendingReview',
        history: [
          { status: 'Submitted', enteredAt: at('09:30:41.220'), reason: null, actor: 'client' },
          { status: 'Validated', enteredAt: at('09:30:41.904'), reason: null, actor: 'system' },
          {
            status: 'PendingReview',
            enteredAt: at('09:30:41.911'),
            reason: 'high priority needs a dispatcher',
            actor: 'system',
          },
        ],
      },
    },
  },
  cancelAppointmentRequest: {
    request: { reason: 'Fixed it ourselves', cancelledBy: 'Jonas Weber' },
    responses: { 200: { id: appointmentId, status: 'Cancelled', cancelledAt: at('11:02:13.377') } },
  },
  getLiveness: { responses: { 200: { status: 'ok', version: '1.4.0' } } },
  getReadiness: {
    responses: {
      200: { ready: true, checks: { postgres: dependency(2), kafka: dependency(4) } },
      503: {
        ready: false,
        checks: { postgres: dependency(2), kafka: { status: 'Down', latencyMs: 1000, error: 'broker not reachable' } },
      },
    },
  },
  getMetrics: {
    responses: {
      200:
        '# HELP http_requests_total HTTP requests by method, route template and status\n' +
        '# TYPE http_requests_total counter\n' +
        'http_requests_total{method="POST",route="/api/v1/inbound/targets/batch",status="200"} 1842\n',
    },
  },
  getOpenApiDocument: {
    responses: { 200: { openapi: '3.1.0', info: { title: 'Connect Integration Service', version: '1.4.0' } } },
  },
  getApiReference: {
    responses: {
      200: '<!doctype html>\n<html lang="en">\n<head>…</head>\n<body>\n<redoc spec-url="/openapi.json"></redoc>\n<script src="/docs/redoc.standalone.js"></script>\n</body>\n</html>\n',
    },
  },
  getApiReferenceRenderer: {
    responses: {
      200: '/*! For license information please see redoc.standalone.js.LICENSE.txt */\n!function(e,t){…}(this,…);\n',
    },
  },
  getConnectPush: {
    responses: {
      200: '#!/usr/bin/env node\n// connect-push 0.1.0: bulk upload of targets to the Connect Integration Service.\n…\n',
    },
  },
  getConnectPushChecksum: {
    responses: { 200: '3f9a2c…e41b  connect-push.mjs\n' },
  },
};
