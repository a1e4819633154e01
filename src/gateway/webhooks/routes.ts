import type { Config } from '../../shared/config.js';
import type { TenantPool, TenantTx } from '../../shared/db/tenant-scope.js';
import { AppError, notFound } from '../../shared/errors.js';
import { subscriptionOf } from '../../shared/webhooks/event-types.js';
import {
  findEvent,
  listAttempts,
  replayEvent,
  replayFailedSince,
  sendTestEvent,
} from '../../shared/webhooks/endpoint-deliveries.js';
import {
  countEndpoints,
  createEndpoint,
  deleteEndpoint,
  findEndpoint,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  setEndpointStatus,
  updateEndpoint,
  type EndpointRef,
} from '../../shared/webhooks/endpoints.js';
import { TargetRefusedError, checkWebhookTarget, parseWebhookUrl } from '../../shared/webhooks/target-policy.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import {
  attemptListSchema,
  attemptsCursor,
  attemptsQuery,
  createEndpointBody,
  createdEndpointSchema,
  endpointListSchema,
  endpointParams,
  endpointSchema,
  queuedSchema,
  replayBody,
  replayFailedBody,
  rotateSecretBody,
  rotatedSecretSchema,
  testEventSchema,
  updateEndpointBody,
} from './schemas.js';

// A client's own webhook endpoints (scope webhooks.manage): the admin CLI's operations, through
// the same store (shared/webhooks), limited to the caller's endpoints: another's is 404. Every
// statement runs scoped to the caller's tenant (shared/db/tenant-scope.ts); the URL check, which
// resolves the host, runs between two checkouts, holding no connection.

const tag = 'Webhook endpoints';
const base = '/api/v1/webhook-endpoints';
const one = `${base}/{endpointId}`;

/** The SSRF policy, as at the CLI: the URL's form, then every address its host resolves to. */
async function checkUrl(url: string, allowPrivate: boolean): Promise<void> {
  try {
    await checkWebhookTarget(parseWebhookUrl(url), allowPrivate);
  } catch (err) {
    if (err instanceof TargetRefusedError)
      throw new AppError('validation_failed', 'The request body is invalid.', { url: [err.message] });
    throw err;
  }
}

/** A client's maxInFlight within the operator's bound (the schema checks only the absolute range). */
function checkMaxInFlight(maxInFlight: number | null | undefined, webhooks: Config['webhooks']): void {
  if (maxInFlight != null && maxInFlight > webhooks.endpointConcurrencyMax)
    throw new AppError('validation_failed', 'The request body is invalid.', {
      maxInFlight: [`must be at most ${webhooks.endpointConcurrencyMax} (WEBHOOK_ENDPOINT_CONCURRENCY_MAX)`],
    });
}

/** Stored subscription of validated names (the schema admits only known types and "all" alone). */
const subscription = (names: string[]) => subscriptionOf(names)!;

export const webhookEndpointRoutes = (pool: TenantPool, webhooks: Config['webhooks']): RouteDefinition[] => {
  const ref = (endpointId: string, clientId: string): EndpointRef => ({ endpointId, clientId });
  const mustGet = async (tx: TenantTx, r: EndpointRef) => {
    const endpoint = await getEndpoint(tx, r, webhooks);
    if (!endpoint) throw notFound(`Webhook endpoint ${r.endpointId}`);
    return endpoint;
  };
  const mustFind = async (tx: TenantTx, r: EndpointRef) => {
    const endpoint = await findEndpoint(tx, r);
    if (!endpoint) throw notFound(`Webhook endpoint ${r.endpointId}`);
    return endpoint;
  };
  const endpointOps = { tag, auth: 'apiKey', params: endpointParams, errorStatuses: [404] } as const;

  return [
    defineRoute({
      method: 'post',
      path: base,
      operationId: 'createWebhookEndpoint',
      summary: 'Register a webhook endpoint (its signing secret is shown this once)',
      description:
        'The URL must be http(s) and resolve only to public addresses (400 with the reason otherwise). Events of the ' +
        'subscribed types raised from now on are POSTed to it, signed with the returned secret (Standard Webhooks). ' +
        `At most ${webhooks.endpointsPerClient} endpoints per client (409 webhook_endpoint_limit).`,
      tag,
      auth: 'apiKey',
      body: createEndpointBody,
      errorStatuses: [409],
      errorDescriptions: { 409: 'The client has as many endpoints as it may (webhook_endpoint_limit).' },
      responses: { 201: { description: 'Registered; store the secret now', schema: createdEndpointSchema } },
      async handler({ body, client }) {
        checkMaxInFlight(body.maxInFlight, webhooks);
        await checkUrl(body.url, webhooks.allowPrivateTargets);
        return pool.run(client.tenantId, async (tx) => {
          if ((await countEndpoints(tx, client.clientId)) >= webhooks.endpointsPerClient) {
            throw new AppError(
              'webhook_endpoint_limit',
              `A client may have ${webhooks.endpointsPerClient} webhook endpoints; delete one first.`,
              null,
              { limit: webhooks.endpointsPerClient },
            );
          }
          const created = await createEndpoint(tx, {
            tenantId: client.tenantId,
            clientId: client.clientId,
            url: body.url,
            eventTypes: subscription(body.events),
            maxInFlight: body.maxInFlight,
          });
          const endpoint = await mustGet(tx, ref(created.endpointId, client.clientId));
          return { status: 201, body: { ...endpoint, secret: created.secret } };
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: base,
      operationId: 'listWebhookEndpoints',
      summary: "The caller's webhook endpoints (never their secrets)",
      description: 'Every endpoint of the calling client, oldest first, with its status and delivery counts.',
      tag,
      auth: 'apiKey',
      responses: { 200: { description: 'Every endpoint of the caller, oldest first', schema: endpointListSchema } },
      async handler({ client }) {
        return {
          status: 200,
          body: { items: await pool.run(client.tenantId, (tx) => listEndpoints(tx, client.clientId, webhooks)) },
        };
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'get',
      path: one,
      operationId: 'getWebhookEndpoint',
      summary: 'One webhook endpoint: status, why disabled, failures, delivery counts',
      description: "Another client's endpoint is 404. The secret is never shown here (only on create and rotate).",
      responses: { 200: { description: 'The endpoint', schema: endpointSchema } },
      async handler({ params, client }) {
        return {
          status: 200,
          body: await pool.run(client.tenantId, (tx) => mustGet(tx, ref(params.endpointId, client.clientId))),
        };
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'patch',
      path: one,
      operationId: 'updateWebhookEndpoint',
      summary: 'Change the URL, the subscribed event types and/or the attempts in flight',
      description:
        'A new URL is checked as on create. Deliveries already queued go to the new URL. maxInFlight null: back to ' +
        "the operator's default.",
      body: updateEndpointBody,
      responses: { 200: { description: 'The changed endpoint', schema: endpointSchema } },
      async handler({ params, body, client }) {
        const r = ref(params.endpointId, client.clientId);
        await pool.run(client.tenantId, (tx) => mustFind(tx, r));
        checkMaxInFlight(body.maxInFlight, webhooks);
        if (body.url !== undefined) await checkUrl(body.url, webhooks.allowPrivateTargets);
        return pool.run(client.tenantId, async (tx) => {
          const changed = await updateEndpoint(tx, r, {
            url: body.url ?? null,
            eventTypes: body.events ? subscription(body.events) : null,
            maxInFlight: body.maxInFlight,
          });
          if (!changed) throw notFound(`Webhook endpoint ${params.endpointId}`);
          return { status: 200, body: await mustGet(tx, r) };
        });
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'delete',
      path: one,
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint with its delivery history',
      description: 'Nothing more is delivered to it. The events stay (other endpoints, the event feed).',
      responses: { 204: { description: 'Deleted' } },
      async handler({ params, client }) {
        const r = ref(params.endpointId, client.clientId);
        if (!(await pool.transaction(client.tenantId, (tx) => deleteEndpoint(tx, r))))
          throw notFound(`Webhook endpoint ${params.endpointId}`);
        return { status: 204, body: null };
      },
    }),
    ...(['disable', 'enable'] as const).map((verb) =>
      defineRoute({
        ...endpointOps,
        method: 'post',
        path: `${one}/${verb}`,
        operationId: `${verb}WebhookEndpoint`,
        summary:
          verb === 'disable'
            ? 'Disable an endpoint: nothing is delivered and no new event is queued for it'
            : 'Enable an endpoint (also one disabled for failing): its waiting deliveries resume',
        description:
          verb === 'enable'
            ? 'Consecutive failures are reset and the breaker closed. Events raised while it was disabled were not queued: replay them with replay-failed.'
            : 'Deliveries already queued wait (they are sent after enable); events raised meanwhile are not queued for it.',
        responses: { 200: { description: 'The endpoint', schema: endpointSchema } },
        async handler({ params, client }) {
          const r = ref(params.endpointId, client.clientId);
          const status = verb === 'enable' ? 'Active' : 'Disabled';
          return pool.run(client.tenantId, async (tx) => {
            if (!(await setEndpointStatus(tx, r, status, 'disabled by the client')))
              throw notFound(`Webhook endpoint ${params.endpointId}`);
            return { status: 200, body: await mustGet(tx, r) };
          });
        },
      }),
    ),
    defineRoute({
      ...endpointOps,
      method: 'post',
      path: `${one}/rotate-secret`,
      operationId: 'rotateWebhookSecret',
      summary: 'New signing secret (shown this once); the previous one keeps signing during the overlap',
      description:
        'During the overlap every delivery carries two signatures (new and previous secret), so a receiver can ' +
        'switch secrets without missing or refusing an event.',
      body: rotateSecretBody,
      responses: { 200: { description: 'The new secret', schema: rotatedSecretSchema } },
      async handler({ params, body, client }) {
        const r = ref(params.endpointId, client.clientId);
        const rotated = await pool.run(client.tenantId, (tx) => rotateSecret(tx, r, body.overlapSeconds * 1000));
        if (!rotated) throw notFound(`Webhook endpoint ${params.endpointId}`);
        return { status: 200, body: rotated };
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'post',
      path: `${one}/test`,
      operationId: 'sendWebhookTestEvent',
      summary: 'Send a webhook.test event to this endpoint alone',
      description:
        'Queued like any event (signed, retried, listed in attempts), delivered to this endpoint only whatever its ' +
        'subscription, and not in the event feed. Its data: {endpointId, message}.',
      responses: { 202: { description: 'Queued', schema: testEventSchema } },
      async handler({ params, client }) {
        return pool.run(client.tenantId, async (tx) => {
          const endpoint = await mustFind(tx, ref(params.endpointId, client.clientId));
          const event = await sendTestEvent(tx, endpoint);
          return {
            status: 202,
            body: { eventId: event.id, type: event.type, endpointStatus: endpoint.status as 'Active' },
          };
        });
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'get',
      path: `${one}/attempts`,
      operationId: 'listWebhookAttempts',
      summary: "Delivery attempts to this endpoint, newest first (optionally one event's)",
      description:
        'Each attempt: outcome, HTTP status, latency, error and the first 500 bytes of the answer. Paged by cursor: ' +
        "each page's nextCursor as the next request's cursor.",
      query: attemptsQuery(1000),
      responses: {
        200: { description: 'Attempts: outcome, status, latency, error, response snippet', schema: attemptListSchema },
      },
      async handler({ params, query, client }) {
        const found = await pool.run(client.tenantId, async (tx) => {
          await mustFind(tx, ref(params.endpointId, client.clientId));
          const by = { endpointId: params.endpointId, eventId: query.eventId, beforeId: query.cursor };
          return listAttempts(tx, by, query.limit + 1); // one more: whether another page follows
        });
        const items = found.slice(0, query.limit);
        const nextCursor = found.length > query.limit ? attemptsCursor.after(items.at(-1)!.attemptId) : null;
        return { status: 200, body: { items, nextCursor } };
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'post',
      path: `${one}/replay`,
      operationId: 'replayWebhookEvent',
      summary: 'Deliver one event to this endpoint again (same webhook-id and body)',
      description: "The event must be the caller's (404 otherwise). A new round of the retry schedule starts.",
      body: replayBody,
      responses: { 202: { description: 'Queued', schema: queuedSchema } },
      async handler({ params, body, client }) {
        return pool.run(client.tenantId, async (tx) => {
          const endpoint = await mustFind(tx, ref(params.endpointId, client.clientId));
          const event = await findEvent(tx, body.eventId, client.clientId);
          if (!event) throw notFound(`Event ${body.eventId}`);
          const queued = await replayEvent(tx, event, endpoint.id);
          return { status: 202, body: { queued: queued.length, endpointStatus: endpoint.status as 'Active' } };
        });
      },
    }),
    defineRoute({
      ...endpointOps,
      method: 'post',
      path: `${one}/replay-failed`,
      operationId: 'replayFailedWebhookEvents',
      summary: 'Deliver again every event since a time that failed or was missed at this endpoint',
      description:
        'Queues the events recorded since `since` whose delivery here gave up (Failed), and those it missed while ' +
        'disabled (of the types it is subscribed to, raised after it was created).',
      body: replayFailedBody,
      responses: { 202: { description: 'Queued', schema: queuedSchema } },
      async handler({ params, body, client }) {
        return pool.run(client.tenantId, async (tx) => {
          const endpoint = await mustFind(tx, ref(params.endpointId, client.clientId));
          const queued = await replayFailedSince(tx, endpoint.id, new Date(body.since));
          return { status: 202, body: { queued, endpointStatus: endpoint.status as 'Active' } };
        });
      },
    }),
  ];
};
