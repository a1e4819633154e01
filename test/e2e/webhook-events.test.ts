import { randomUUID } from 'node:crypto';
import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { chunkMessage } from '../support/chunk-messages.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import { webhookEventTypes } from '../../src/shared/webhooks/event-types.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { jobsWorker } from '../../src/workers/jobs/kind.js';
import { materialsWorker } from '../../src/workers/materials/kind.js';
import { appointmentsWorker } from '../../src/workers/appointments/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { webhookDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { admin, bearer, createClientWithKey, insertImportJob } from '../support/fixtures.js';
import { eventually, testBus } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { accessToken, bearerToken } from './oauth-helpers.js';
import {
  startWebhookReceiver,
  verifiesWith,
  webhookBodyValidator,
  type Received,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

// Every event kind through the real pipeline: gateway → Kafka → the real inbound and jobs
// workers of every kind (which write the outbox in their own transaction) → the dispatcher → a real HTTP
// receiver here, verified with an independent Standard Webhooks verifier and the library, and
// checked against the OpenAPI webhooks section. Each state change arrives exactly once.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true'; // the receiver is on 127.0.0.1 (admin CLI check)

const suite = useGatewaySuite({
  env: () => ({
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    INBOUND_CHUNK_MAX_BYTES: '4096',
  }),
  workers: [inboundWorker, inboundExpressWorker, jobsWorker, materialsWorker, appointmentsWorker],
});

let receiver: WebhookReceiver;
let dispatcher: RunningWorkers;
let validateBody: ReturnType<typeof webhookBodyValidator>;
let all: { endpointId: string; secret: string };
let jobsOnly: { endpointId: string; secret: string };
let otherClientHook: { endpointId: string; secret: string };

const key = () => suite.demo.clients.all!.apiKey;
const clientId = () => suite.demo.clients.all!.clientId;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  dispatcher = await startWorkers({
    config: suite.config,
    logger: createLogger('warn', 'test-webhooks'),
    kinds: [webhookDispatcher],
  });
  validateBody = webhookBodyValidator(suite.api.doc);
  const create = (client: string, path: string, events: string) =>
    admin(suite.pool, webhookCreate, ['--client', client, '--url', receiver.url(path), '--events', events]);
  all = await create(clientId(), '/all', 'all');
  jobsOnly = await create(clientId(), '/jobs-only', 'field_job.created');
  const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
  otherClientHook = await create(other.clientId, '/other-client', 'all');
});

afterAll(async () => {
  await dispatcher?.stop();
  await receiver?.close();
});

/** Waits for the one event of a type whose data matches, on the catch-all endpoint, and checks it. */
async function arrival(type: string, match: (data: any) => boolean): Promise<Received> {
  const [hit] = await receiver.waitFor('/all', 1, (r) => r.json?.type === type && match(r.json.data), 30_000);
  expect(verifiesWith(all.secret, hit!)).toBe(true);
  expect(verifiesWith(jobsOnly.secret, hit!)).toBe(false); // each endpoint has its own secret
  expect(validateBody(hit!.json)).toEqual([]);
  expect(hit!.headers['webhook-id']).toBe(hit!.json.id);
  expect(hit!.headers['content-type']).toBe('application/json');
  expect(hit!.json).toMatchObject({ type, version: 1, tenantId: suite.demo.tenantId, clientId: clientId() });
  return hit!;
}

/**
 * The event arrived once, and stays the only one for its state change: once every delivery of it
 * is recorded Succeeded (the dispatcher records it after the receiver answered, so the test polls
 * for it), none is sent again, and the receiver holds exactly one.
 */
async function exactlyOnce(hit: Received, eventsOfChange: () => Promise<number>, endpoints = 1) {
  const statuses = async () =>
    (await suite.pool.query('SELECT status FROM webhook_deliveries WHERE event_id = $1', [hit.json.id])).rows;
  let last: unknown[] = [];
  await eventually(
    async () => {
      last = await statuses();
      return last.length === endpoints && last.every((r: any) => r.status === 'Succeeded') ? true : undefined;
    },
    30_000,
    () => `every delivery of ${hit.json.id} Succeeded (last seen: ${JSON.stringify(last)})`,
  );
  expect(receiver.received('/all').filter((r) => r.headers['webhook-id'] === hit.json.id)).toHaveLength(1);
  expect(await eventsOfChange()).toBe(1);
}

const importJobEvents = async (importJobId: number) =>
  (
    await suite.pool.query(
      `SELECT count(*)::int AS n FROM webhook_events WHERE type LIKE 'import_job.%' AND (body::jsonb)->'data'->>'importJobId' = $1`,
      [String(importJobId)],
    )
  ).rows[0].n as number;

describe('webhook events of the workers', () => {
  it('import_job.completed: once, signed, with the final counts', async () => {
    const res = await suite.api.post('/api/v1/inbound/targets', {
      body: { sourceSystem: 'crm', ...makeTargets(1, 'wh-ok')[0] },
      headers: bearer(key()),
    });
    expect(res.status).toBe(200);
    const id = res.body.importJobId;
    const hit = await arrival('import_job.completed', (d) => d.importJobId === id);
    expect(hit.json.data).toMatchObject({
      importJobId: id,
      kind: 'Single',
      status: 'Completed',
      sourceSystem: 'crm',
      counts: { received: 1, accepted: 1, rejected: 0, applied: 1, failed: 0 },
      failureReason: null,
    });
    await exactlyOnce(hit, () => importJobEvents(id));
  });

  it('import_job.completed_with_errors: once, for a batch in several chunks with rejected targets', async () => {
    const targets: unknown[] = makeTargets(30, 'wh-mixed');
    targets.push({ externalId: 'no-name' });
    const res = await suite.api.post('/api/v1/inbound/targets/batch', {
      body: { sourceSystem: 'erp', targets },
      headers: bearer(key()),
    });
    expect(res.status).toBe(200);
    const id = res.body.importJobId;
    const hit = await arrival('import_job.completed_with_errors', (d) => d.importJobId === id);
    expect(hit.json.data).toMatchObject({
      status: 'CompletedWithErrors',
      counts: { received: 31, accepted: 30, rejected: 1, applied: 30, failed: 0 },
    });
    const { rows } = await suite.pool.query('SELECT chunk_count FROM import_jobs WHERE id = $1', [id]);
    expect(rows[0].chunk_count).toBeGreaterThan(1); // only the chunk that finished the job raised it
    await exactlyOnce(hit, () => importJobEvents(id));
  });

  it('import_job.failed: once, when its only chunk is dead-lettered', async () => {
    // A real job whose chunk cannot be applied: PostgreSQL refuses NUL in text, every try fails,
    // the chunk goes to the dead-letter topic and the job fails (failChunk), event included.
    const caller = { tenantId: suite.demo.tenantId, clientId: clientId() };
    const id = await insertImportJob(suite.pool, caller);
    const bus = testBus();
    try {
      const poison = chunkMessage(
        { ...caller, requestId: null, correlationId: null },
        { importJobId: String(id), sourceSystem: 'fixture', chunkIndex: 0, chunkCount: 1 },
        [
          {
            index: 0,
            target: { externalId: 'poison', name: 'bad\u0000name', coordinates: { latitude: 1, longitude: 2 } },
          },
        ],
      );
      await bus.produce(topicNames(suite.config.kafka).inboundTargets, [poison]);
    } finally {
      await bus.close();
    }
    const hit = await arrival('import_job.failed', (d) => d.importJobId === id);
    expect(hit.json.data).toMatchObject({ status: 'Failed', counts: { applied: 0, failed: 1 } });
    expect(hit.json.data.failureReason).toEqual(expect.any(String));
    await exactlyOnce(hit, () => importJobEvents(id));
  });

  it('field_job.created: once, to every subscribed endpoint of the creating client only', async () => {
    const res = await suite.api.post('/api/v1/connect/jobs', {
      headers: bearer(key()),
      body: {
        externalId: 'WH-JOB-1',
        title: 'Boiler service',
        jobType: 'MAINTENANCE',
        customer: { name: 'ACME' },
        site: { address: { line1: 'Main 1', city: 'Berlin', countryCode: 'DE' } },
      },
    });
    expect(res.status).toBe(201);
    const hit = await arrival('field_job.created', (d) => d.fieldJobId === res.body.fieldJobId);
    const { rows } = await suite.pool.query('SELECT id FROM work_orders WHERE field_job_id = $1', [
      res.body.fieldJobId,
    ]);
    expect(hit.json.data).toEqual({
      fieldJobId: res.body.fieldJobId,
      jobNumber: res.body.jobNumber,
      externalId: 'WH-JOB-1',
      status: 'Created',
      workOrderId: rows[0].id,
      jobType: 'MAINTENANCE',
      title: 'Boiler service',
      createdAt: expect.any(String),
    });
    const [filtered] = await receiver.waitFor('/jobs-only', 1, (r) => r.json?.id === hit.json.id);
    expect(verifiesWith(jobsOnly.secret, filtered!)).toBe(true);
    expect(filtered!.body).toBe(hit.body); // the same event, signed per endpoint
    await exactlyOnce(
      hit,
      async () => {
        const events = await suite.pool.query(
          `SELECT count(*)::int AS n FROM webhook_events WHERE (body::jsonb)->'data'->>'fieldJobId' = $1`,
          [res.body.fieldJobId],
        );
        return events.rows[0].n;
      },
      2,
    );
  });

  it('sends nothing to endpoints of other clients or to endpoints not subscribed to the type', () => {
    expect(receiver.received('/other-client')).toEqual([]);
    expect(receiver.received('/jobs-only').every((r) => r.json.type === 'field_job.created')).toBe(true);
    void otherClientHook;
  });
});

describe('webhook events of the materials and appointments workers', () => {
  it('work_order.materials_recorded: once, the usage as booked, to the usage client', async () => {
    const wo = suite.demo.workOrders[0]!;
    const res = await suite.api.post(`/api/v1/connect/work-orders/${wo.workOrderId}/materials`, {
      headers: bearer(key()),
      body: {
        externalEventId: 'wh-usage-1',
        externalLocationCode: 'WH-MAIN',
        usedAt: '2025-06-01T08:00:00Z',
        materials: [{ sku: 'CU-PIPE-15', quantity: 2.5, unitOfMeasure: 'm' }],
      },
    });
    expect(res.status).toBe(200);
    const usageId = res.body.materialUsageId;
    const hit = await arrival('work_order.materials_recorded', (d) => d.materialUsageId === usageId);
    expect(hit.json.data).toMatchObject({
      workOrderId: wo.workOrderId,
      externalWorkOrderId: wo.externalWorkOrderId,
      externalEventId: 'wh-usage-1',
      status: 'Applied',
      externalLocationCode: 'WH-MAIN',
      usedAt: '2025-06-01T08:00:00.000Z',
      materials: [{ sku: 'CU-PIPE-15', quantity: 2.5, unitOfMeasure: 'm', inventoryItemId: expect.any(String) }],
    });
    // A replay of the usage books nothing and raises nothing.
    await suite.api.post(`/api/v1/connect/work-orders/${wo.workOrderId}/materials`, {
      headers: bearer(key()),
      body: {
        externalEventId: 'wh-usage-1',
        externalLocationCode: 'WH-MAIN',
        usedAt: '2025-06-01T08:00:00Z',
        materials: [{ sku: 'CU-PIPE-15', quantity: 2.5, unitOfMeasure: 'm' }],
      },
    });
    const { rows } = await suite.pool.query(
      `SELECT count(*)::int AS n FROM webhook_events WHERE (body::jsonb)->'data'->>'materialUsageId' = $1`,
      [usageId],
    );
    expect(rows[0].n).toBe(1);
  });

  it('appointment_request.status_changed: once per change, with from, to, reason and actor', async () => {
    const token = await accessToken(suite.api, suite.demo.clients.all!);
    const submitted = await suite.api.post('/connect/v1/appointment-requests', {
      headers: bearerToken(token),
      body: {
        externalReference: 'WH-APR-1',
        serviceType: 'repair',
        priority: 'normal',
        customer: { name: 'Harbour Hospital' },
        contact: { name: 'Kim Meyer', email: 'kim@example.com' },
        location: { address: { line1: 'Am Hafen 1', city: 'Hamburg', countryCode: 'DE' } },
      },
    });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id;
    const validated = await arrival(
      'appointment_request.status_changed',
      (d) => d.appointmentRequestId === id && d.toStatus === 'PendingReview',
    );
    expect(validated.json.data).toMatchObject({ fromStatus: 'Validated', toStatus: 'PendingReview', actor: 'system' });
    const cancelled = await suite.api.post(`/connect/v1/appointment-requests/${id}/cancel`, {
      headers: { ...bearerToken(token), 'idempotency-key': randomUUID() },
      body: { reason: 'Resolved by phone', cancelledBy: 'portal:kim' },
    });
    expect(cancelled.status).toBe(200);
    const hit = await arrival(
      'appointment_request.status_changed',
      (d) => d.appointmentRequestId === id && d.toStatus === 'Cancelled',
    );
    expect(hit.json.data).toEqual({
      appointmentRequestId: id,
      externalReference: 'WH-APR-1',
      fromStatus: 'PendingReview',
      toStatus: 'Cancelled',
      reason: 'Resolved by phone',
      actor: 'client',
      changedAt: cancelled.body.cancelledAt,
    });
    // Submitted → Validated, Validated → PendingReview, PendingReview → Cancelled: three events, no more.
    const { rows } = await suite.pool.query(
      `SELECT (body::jsonb)->'data'->>'toStatus' AS to FROM webhook_events
        WHERE (body::jsonb)->'data'->>'appointmentRequestId' = $1 ORDER BY created_at`,
      [id],
    );
    expect(rows.map((r) => r.to)).toEqual(['Validated', 'PendingReview', 'Cancelled']);
  });
});

describe('the OpenAPI webhooks section', () => {
  it('documents every event type with the signature headers and its body, in a valid 3.1 document', async () => {
    const doc = suite.api.doc as any;
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(Object.keys(doc.webhooks).sort()).toEqual([...webhookEventTypes, 'webhook.test'].sort()); // test: on request
    for (const type of webhookEventTypes) {
      const op = doc.webhooks[type].post;
      expect(op.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual([
        'header:webhook-id',
        'header:webhook-signature',
        'header:webhook-timestamp',
      ]);
      expect(op.requestBody.content['application/json'].schema.$ref).toMatch(/^#\/components\/schemas\/\w+Event$/);
      expect(op.responses['2XX']).toBeDefined();
    }
    expect(doc.info.description).toContain('## Webhooks');
  });
});

// Keep the waits above honest: the dispatcher did not fall behind.
it('leaves no delivery waiting', async () => {
  await eventually(async () => {
    const { rows } = await suite.pool.query(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status NOT IN ('Succeeded')`,
    );
    return rows[0].n === 0 ? true : undefined;
  });
});
