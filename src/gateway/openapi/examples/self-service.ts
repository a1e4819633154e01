import { webhookExample } from '../../../shared/webhooks/examples.js';
import type { OperationExamples } from './operations.js';

// Examples of the webhook endpoint operations and the event feed (issue 26).

const at = (time: string) => `2026-11-23T${time}Z`;
const endpointId = '0b6f3d9e-8c21-4a57-b1e4-7f2a9c5d3e10';
const clientId = 'c7a3e2f1-4b5d-4c6e-9f70-8a1b2c3d4e5f';
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6eR9c9zOT5c=';
const url = 'https://erp.example.com/hooks/connect';

const endpoint = {
  endpointId,
  clientId,
  url,
  events: ['import_job.completed', 'import_job.failed'],
  status: 'Active',
  disabledReason: null,
  disabledAt: null,
  consecutiveFailures: 0,
  maxInFlight: 4,
  breaker: { state: 'Closed', openedAt: null, nextProbeAt: null, opensInARow: 0 },
  lastSuccessAt: at('07:15:03.530'),
  lastFailureAt: null,
  secretRotatedAt: null,
  previousSecretValidUntil: null,
  deliveries: { pending: 0, delivering: 0, succeeded: 42, failed: 0 },
  failedAttempts: 1,
  createdAt: at('06:00:00.000'),
};

const fresh = {
  ...endpoint,
  lastSuccessAt: null,
  deliveries: { pending: 0, delivering: 0, succeeded: 0, failed: 0 },
  failedAttempts: 0,
};

const disabled = {
  ...endpoint,
  status: 'Disabled',
  disabledReason: 'disabled by the client',
  disabledAt: at('08:00:00.000'),
};

const eventId = webhookExample('import_job.completed').id;

export const selfServiceExamples: Record<string, OperationExamples> = {
  createWebhookEndpoint: {
    request: { url, events: ['import_job.completed', 'import_job.failed'] },
    responses: { 201: { ...fresh, secret } },
  },
  listWebhookEndpoints: { responses: { 200: { items: [endpoint] } } },
  getWebhookEndpoint: { responses: { 200: endpoint } },
  updateWebhookEndpoint: {
    request: { events: ['all'] },
    responses: { 200: { ...endpoint, events: ['all'] } },
  },
  deleteWebhookEndpoint: { responses: {} },
  disableWebhookEndpoint: { responses: { 200: disabled } },
  enableWebhookEndpoint: { responses: { 200: endpoint } },
  rotateWebhookSecret: {
    request: { overlapSeconds: 86_400 },
    responses: {
      200: {
        endpointId,
        secret: 'whsec_q2Zc8yH0mXvB3nJ7tLw4Ek9sRf1Ua6GpDo5Ci8Vh2Yk=',
        rotatedAt: at('09:00:00.000'),
        previousSecretValidUntil: '2026-11-24T09:00:00.000Z',
      },
    },
  },
  sendWebhookTestEvent: {
    responses: { 202: { eventId: 'evt_01KAP9A1B2C3D4E5F6G7H8J9K0', type: 'webhook.test', endpointStatus: 'Active' } },
  },
  listWebhookAttempts: {
    responses: {
      200: {
        items: [
          {
            attemptId: 310,
            eventId,
            type: 'import_job.completed',
            endpointId,
            attempt: 2,
            outcome: 'Succeeded',
            statusCode: 200,
            latencyMs: 87,
            error: null,
            responseSnippet: 'ok',
            startedAt: at('07:15:08.410'),
            finishedAt: at('07:15:08.497'),
            deliveryStatus: 'Succeeded',
          },
          {
            attemptId: 305,
            eventId,
            type: 'import_job.completed',
            endpointId,
            attempt: 1,
            outcome: 'HttpError',
            statusCode: 502,
            latencyMs: 31,
            error: 'HTTP 502',
            responseSnippet: 'Bad Gateway',
            startedAt: at('07:15:03.420'),
            finishedAt: at('07:15:03.451'),
            deliveryStatus: 'Succeeded',
          },
        ],
        nextCursor: null,
      },
    },
  },
  replayWebhookEvent: { request: { eventId }, responses: { 202: { queued: 1, endpointStatus: 'Active' } } },
  replayFailedWebhookEvents: {
    request: { since: at('00:00:00.000') },
    responses: { 202: { queued: 17, endpointStatus: 'Active' } },
  },
  listEvents: {
    responses: {
      200: {
        events: [
          webhookExample('import_job.completed'),
          { ...webhookExample('field_job.created'), id: 'evt_01KAP80Q2W3E4R5T6Y7V8J9K1A' },
        ],
        next: 'c2.3k',
        hasMore: false,
      },
    },
  },
};
