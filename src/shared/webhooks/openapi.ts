import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import {
  webhookEnvelopeSchema,
  webhookEventDescriptions,
  webhookEventTypes,
  webhookEventIdPattern,
  webhookEventVersion,
  type WebhookEventType,
} from './event-types.js';
import { testEventType } from './endpoint-deliveries.js';
import { webhookExample } from './examples.js';

// The OpenAPI 3.1 `webhooks` section: one POST per event type, as the receiver gets it.

const signatureHeaders = z.object({
  'webhook-id': z.string().meta({
    description: 'The event id (evt_…, also `id` in the body): the same on every retry and replay. Deduplicate on it.',
  }),
  'webhook-timestamp': z.string().meta({
    description: 'Unix time in seconds of this attempt. Reject messages too far from your clock (e.g. 5 minutes).',
  }),
  'webhook-signature': z.string().meta({
    description:
      'Space-separated `v1,<base64 HMAC-SHA256>` signatures of `<webhook-id>.<webhook-timestamp>.<raw body>` keyed ' +
      'with the base64-decoded part of the endpoint secret after `whsec_`. Two are sent while a rotated secret is ' +
      'still valid; accept the message if any one matches.',
  }),
});

const deliveryDescription =
  'Delivered at least once, signed per Standard Webhooks (https://www.standardwebhooks.com/), by POST with ' +
  '`Content-Type: application/json`. Answer any 2xx within the timeout (default 10 s) to acknowledge; anything else ' +
  '(3xx included: redirects are not followed) or no answer is a failed attempt, retried with exponential backoff ' +
  'and jitter over about a day under the same webhook-id.';

const operationId = (type: WebhookEventType) => `webhook_${type.replace(/\./g, '_')}`;

/** The test event (POST /api/v1/webhook-endpoints/{endpointId}/test): one endpoint, never the feed. */
const testEventSchema = z
  .strictObject({
    id: z.string().regex(webhookEventIdPattern),
    type: z.literal(testEventType),
    version: z.literal(webhookEventVersion),
    timestamp: z.iso.datetime(),
    tenantId: z.uuid(),
    clientId: z.uuid(),
    data: z.strictObject({ endpointId: z.uuid(), message: z.string() }),
  })
  .meta({ id: 'WebhookTestEvent', description: 'Sent on request to check an endpoint; it changes nothing.' });

const testEventOperation = {
  post: {
    operationId: 'webhook_webhook_test',
    summary: `${testEventType} (version ${webhookEventVersion})`,
    description:
      'Sent to one endpoint when its client asks (POST /api/v1/webhook-endpoints/{endpointId}/test), whatever its ' +
      `subscription; never in the event feed.\n\n${deliveryDescription}`,
    tags: ['Webhooks'],
    security: [],
    requestParams: { header: signatureHeaders },
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: testEventSchema,
          example: {
            ...webhookExample('import_job.completed'),
            id: 'evt_01KAP9A1B2C3D4E5F6G7H8J9K0',
            type: testEventType,
            data: {
              endpointId: '0b6f3d9e-8c21-4a57-b1e4-7f2a9c5d3e10',
              message: 'A test event, sent on request. It changes nothing.',
            },
          },
        },
      },
    },
    responses: {
      '2XX': { description: 'Received.' },
      default: { description: 'Any other answer, or none within the timeout: the attempt failed and is retried.' },
    },
  },
};

export function webhookOperations(): ZodOpenApiPathsObject {
  return Object.fromEntries([
    ...webhookEventTypes.map((type) => [
      type,
      {
        post: {
          operationId: operationId(type),
          summary: `${type} (version ${webhookEventVersion})`,
          description: `${webhookEventDescriptions[type]}\n\n${deliveryDescription}`,
          tags: ['Webhooks'],
          security: [],
          requestParams: { header: signatureHeaders },
          requestBody: {
            required: true,
            content: { 'application/json': { schema: webhookEnvelopeSchema(type), example: webhookExample(type) } },
          },
          responses: {
            '2XX': { description: 'Received: the delivery succeeded and is not sent again (unless replayed).' },
            default: {
              description: 'Any other answer, or none within the timeout: the attempt failed and is retried.',
            },
          },
        },
      },
    ]),
    [testEventType, testEventOperation],
  ]) as ZodOpenApiPathsObject;
}

export const webhooksDescription = [
  '## Webhooks',
  'Instead of polling, an Integration Client can have what the workers did POSTed to its own HTTPS endpoints (see ' +
    'the `webhooks` section of this document for each event and its body). A client registers and manages its own ' +
    'endpoints with the operations tagged "Webhook endpoints" (scope webhooks.manage); operators do the same with the ' +
    'admin CLI (`webhook create --client <id> --url <url> --events <type,…|all>`). Each endpoint has its own signing ' +
    'secret (`whsec_…`, shown once: on create and on rotation). A client that cannot receive HTTP pulls the same ' +
    'events from GET /api/v1/events (scope events.read).',
  '',
  `Event types (version ${webhookEventVersion}): ${webhookEventTypes.map((t) => `\`${t}\``).join(', ')}. Every body is ` +
    'the same envelope `{id, type, version, timestamp, tenantId, clientId, data}`; an event belongs to the client ' +
    "whose request caused it and goes to that client's endpoints subscribed to its type.",
  '',
  'Signatures follow Standard Webhooks: headers `webhook-id` (= `id`), `webhook-timestamp`, `webhook-signature` ' +
    '(`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`; two, space-separated, while a rotated secret overlaps), so ' +
    'any Standard Webhooks library verifies them. Delivery is at least once: deduplicate on `webhook-id`. Order is ' +
    'not guaranteed; use `timestamp`. An endpoint that keeps failing for the whole retry schedule (about a day) is ' +
    'disabled; enable it again (API or operator) and replay what it missed (replay-failed).',
].join('\n');
