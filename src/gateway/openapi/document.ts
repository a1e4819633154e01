import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { errorCatalogue } from '../../shared/errors.js';
import { topicNames, topicPurposes, type TopicName } from '../../shared/kafka/topics.js';
import { serviceVersion } from '../../shared/version.js';
import { webhookOperations, webhooksDescription } from '../../shared/webhooks/openapi.js';
import { scopeOf } from '../auth/route-scopes.js';
import { acceptedRequestMediaTypes } from '../http/body.js';
import { connectErrorSchema, standardErrorSchema } from '../http/error-shapes.js';
import { jsonMediaTypes } from '../http/negotiate.js';
import { jwksPath, tokenPath } from '../oauth/routes.js';
import { tokenScopeDescriptions } from '../oauth/scopes.js';
import { windowSeconds } from '../rate-limit/rate-limiter.js';
import type { UploadWindow } from '../rate-limit/upload-quota.js';
import { defaultJsonShapeLimits } from '../http/json-shape.js';
import type { RouteDefinition } from '../routes/route-definition.js';
import { errorExampleName, errorExampleOf } from './examples/errors.js';
import { operationExamples } from './examples/operations.js';

export type DocumentLimits = {
  rateLimitPerMinute: number;
  bodyLimitBytes: number;
  bodyReadTimeoutMs: number;
  inFlightClientSharePercent: number;
  inFlightTenantSharePercent: number;
  /** Each tenant's share of the gateway's database connections (DATABASE_TENANT_*, DATABASE_STATEMENT_TIMEOUT_MS). */
  databaseShare: { sharePercent: number; edgeSharePercent: number; queue: number; statementTimeoutMs: number };
  uploadWindow: UploadWindow;
  /** The lingering close after a refusal (REFUSED_BODY_DRAIN_BYTES / _MS). */
  refusedBodyDrain: { maxBytes: number; maxMs: number };
  topicPartitions: number;
};

/** The description of each tag our operations carry (test/integration/openapi-clients.test.ts checks all have one). */
const tagDescriptions: Record<string, string> = {
  'Webhook endpoints':
    "The caller's own webhook endpoints (scope webhooks.manage): register, change, rotate secrets, test, inspect " +
    "attempts, replay. Another client's endpoint is 404.",
  Events: 'The event feed (scope events.read): the webhook events, pulled with a cursor, optionally long-polling.',
  Health: 'The integration health report: whether PostgreSQL and Kafka answer, as this gateway sees them.',
  Inventory: 'Warehouse items and their balances (read only).',
  'Inbound targets':
    'Targets (customer sites, stops) pushed one at a time or in batches; each push becomes an import job.',
  'Import jobs': 'What became of each inbound push: status, counts and the errors of rejected targets.',
  Jobs: 'Field jobs with their work orders, answered at once with the job number; route suggestions for drafts.',
  'Work-order materials': 'Materials used on work orders, booked against the inventory.',
  OAuth: 'OAuth 2.0 client credentials: access tokens for /connect/v1, and the public keys that verify them.',
  'Appointment requests': 'Customer appointment requests on /connect/v1 (OAuth access tokens): submit, read, cancel.',
  Operations:
    'Liveness, readiness, metrics, this document and its rendering for people (/docs), for operators (no credentials).',
};

const tagOf = (name: string) => ({ name, ...(tagDescriptions[name] ? { description: tagDescriptions[name] } : {}) });

const errorDescriptions: Record<number, string> = {
  400: 'Invalid request: malformed JSON (invalid_json) or schema violations (validation_failed, per-field errors).',
  401: 'No credential, or a malformed, unknown, revoked or expired one.',
  403: "The credential is valid but lacks the operation's scope (insufficient_scope).",
  404: "Not found (resource_not_found); also for another tenant's or client's objects.",
  408: 'The body did not arrive within the deadline (request_timeout).',
  409: 'Conflict (idempotency_conflict).',
  410: 'Gone (cursor_expired): what the request points at is older than the retention.',
  413: 'Body larger than the documented limit (payload_too_large).',
  415: 'Request media type is not application/json, text/json or application/*+json.',
  422: 'Well-formed but cannot be carried out (unprocessable).',
  429:
    'Rate limit exceeded (rate_limited), a body past the upload quota (upload_quota_exceeded, not read), or past ' +
    "the client's or tenant's share of the memory budget (memory_share_exceeded, not read), or past the tenant's " +
    "share of the gateway's database connections and its queue for more (database_share_exceeded); see Retry-After " +
    'and RateLimit headers.',
  500: 'Unexpected error (internal_error); logged with the request id.',
  503:
    'PostgreSQL or Kafka cannot take the work (service_unavailable; the message names which), or the gateway has no ' +
    'capacity for it now while both answer (service_busy); nothing was accepted. See Retry-After.',
};

const idHeaders = {
  'X-Request-Id': z.string().meta({ description: "This request's id (also in logs and Connect error bodies)." }),
  'X-Correlation-Id': z.string().meta({ description: 'The X-Correlation-Id sent by the client, or a generated one.' }),
};
const rateLimitHeaders = {
  RateLimit: z.string().meta({ description: 'IETF draft RateLimit: `"client";r=<remaining>;t=<seconds to reset>`.' }),
  'RateLimit-Policy': z
    .string()
    .meta({ description: `IETF draft RateLimit-Policy: \`"client";q=<limit>;w=${windowSeconds}\`.` }),
};
const retryAfterHeader = { 'Retry-After': z.string().meta({ description: 'Seconds to wait before retrying.' }) };

/** Media type objects; `example` is a value, or a reference to components.examples (error bodies, shared). */
function content(schema: z.ZodType, mediaTypes: readonly string[], example: unknown) {
  const shown = example === undefined ? {} : isExampleRef(example) ? { examples: { example } } : { example };
  return Object.fromEntries(mediaTypes.map((m) => [m, { schema, ...shown }]));
}

type ExampleRef = { $ref: string };
const isExampleRef = (v: unknown): v is ExampleRef => typeof v === 'object' && v !== null && '$ref' in v;
/** components.examples: the error bodies operations refer to (by name), shared by reference. */
function errorExamples(names: ReadonlySet<string>): Record<string, { summary: string; value: unknown }> {
  return Object.fromEntries(
    [...names].sort().map((name) => [name, { summary: `A ${name.slice(-3)} answer`, value: errorExampleOf(name) }]),
  );
}

const accessToken401 =
  'No access token (missing_credential), not a JWT or an API key instead (malformed_credential), a token with a bad ' +
  'signature, unknown key, wrong typ, issuer or audience, or whose client is gone (invalid_token), or an expired ' +
  'token (expired_token). Carries WWW-Authenticate: Bearer (RFC 6750).';

function errorStatusesOf(route: RouteDefinition): number[] {
  const statuses = new Set<number>([500]);
  if (route.auth !== 'none') [401, 403, 429, 503].forEach((s) => statuses.add(s));
  if (route.params || route.query || route.body) statuses.add(400);
  if (route.body) [408, 413, 415].forEach((s) => statuses.add(s));
  route.errorStatuses?.forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

/** The operation object of a route; the names of the error examples it refers to go into `usedExamples`. */
function operation(
  route: RouteDefinition,
  usedExamples: Set<string>,
  bodyLimitBytes: number,
): ZodOpenApiOperationObject {
  const scope = scopeOf(route.method, route.path);
  const successHeaders = { ...idHeaders, ...(route.auth !== 'none' ? rateLimitHeaders : {}) };
  const examples = operationExamples[route.operationId];
  const responses: Record<string, unknown> = {};
  for (const [status, doc] of Object.entries(route.responses)) {
    const example = examples?.responses[Number(status)];
    responses[status] = {
      description: doc.description,
      headers: z.object({ ...successHeaders, ...doc.headers }),
      ...(doc.schema ? { content: content(doc.schema, route.responseMediaTypes ?? jsonMediaTypes, example) } : {}),
    };
  }
  for (const status of errorStatusesOf(route)) {
    if (route.responses[status]) continue; // the operation documents this status itself
    const connect = route.connectErrorStatuses?.includes(status);
    const exampleName = errorExampleName(status, connect ? 'connect' : 'standard', route.auth);
    usedExamples.add(exampleName);
    responses[String(status)] = {
      description:
        route.errorDescriptions?.[status] ??
        (status === 401 && route.auth === 'accessToken' ? accessToken401 : errorDescriptions[status]) ??
        'Error',
      headers: z.object({ ...idHeaders, ...(status === 429 || status === 503 ? retryAfterHeader : {}) }),
      content: content(connect ? connectErrorSchema : standardErrorSchema, jsonMediaTypes, {
        $ref: `#/components/examples/${exampleName}`,
      }),
    };
  }
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security:
      route.auth === 'apiKey' ? [{ apiKey: [scope!] }] : route.auth === 'accessToken' ? [{ oauth2: [scope!] }] : [],
    ...(route.params || route.query || route.requestHeaders
      ? {
          requestParams: {
            ...(route.params ? { path: route.params } : {}),
            ...(route.query ? { query: route.query } : {}),
            ...(route.requestHeaders ? { header: route.requestHeaders } : {}),
          },
        }
      : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: content(route.body, route.requestMediaTypes ?? acceptedRequestMediaTypes, examples?.request),
          },
          // Machine-readable, for uploaders that cut their data to fit (e.g. connect-push).
          'x-max-body-bytes': route.bodyLimitBytes ?? bodyLimitBytes,
        }
      : {}),
    responses,
  } as ZodOpenApiOperationObject;
}

function describeService(limits: DocumentLimits): string {
  const codes = Object.entries(errorCatalogue)
    .map(([code, e]) => `| \`${code}\` | ${e.description} |`)
    .join('\n');
  return [
    'HTTP/JSON interface through which external systems push work into a field-service organisation and read back what happened.',
    '',
    '## Authentication',
    'Every `/api/...` operation needs `Authorization: Bearer <API key>` (keys look like `cis_<8 hex>_<43 chars>`). ' +
      "The operation's scope is listed in its security requirement. 401: no, malformed, unknown, revoked or expired " +
      'key; 403: a valid key without the scope. A revoked key stops working within the auth cache TTL (default 5 s). ' +
      "Past a number of refused keys per minute from one client address (IPv6: its /64), that address's refused keys " +
      'are answered 429 rate_limited with Retry-After; a valid key is never refused for what others sent.',
    '',
    'Every `/connect/v1/...` operation (appointment requests) needs `Authorization: Bearer <access token>` instead: ' +
      `a short-lived JWT (RFC 9068) from the OAuth 2.0 client-credentials token endpoint \`POST ${tokenPath}\` ` +
      '(client id = the Integration Client id, client secret = one of its API keys; HTTP Basic or form fields). ' +
      `Scopes: ${Object.entries(tokenScopeDescriptions)
        .map(([name, d]) => `\`${name}\` (${d.replace(/\.$/, '')})`)
        .join(', ')}. Verification keys: \`GET ${jwksPath}\`. 401: no, malformed, invalid (signature, issuer, ` +
      'audience, type) or expired token; 403: a valid token without the scope. Rate limits apply per Integration ' +
      'Client as on /api.',
    '',
    '## Limits',
    `- Rate limit per Integration Client: ${limits.rateLimitPerMinute} requests per ${windowSeconds} s window by default ` +
      '(configurable per client), shared by all gateway replicas; 429 with Retry-After, RateLimit and RateLimit-Policy. ' +
      'Replicas lease blocks of a window, so a client spread over several replicas may be refused a few requests ' +
      'before its limit (never admitted beyond it), and RateLimit r is approximate. A client that asks again before ' +
      "a 429's Retry-After has passed is answered 429 no sooner than that time (held at most 5 s).",
    `- Request body: at most ${limits.bodyLimitBytes} bytes (413 beyond), arriving within ` +
      `${limits.bodyReadTimeoutMs} ms (408 beyond), UTF-8 (400 invalid_json otherwise), nested at most ` +
      `${defaultJsonShapeLimits.maxDepth} levels and at most ${defaultJsonShapeLimits.maxKeysPerObject} fields per ` +
      'object (400 validation_failed beyond). Strings and field names must be storable text: no NUL (\\u0000) and ' +
      'no unpaired UTF-16 surrogate (400; in a batch, that target alone is rejected).',
    `- Upload quota per Integration Client: ${limits.uploadWindow.bytesPerSecond} body bytes per second by default ` +
      `(configurable per client), counted in windows of ${limits.uploadWindow.windowSeconds} s ` +
      `(${limits.uploadWindow.windowBytes} bytes, room for the largest body; a 429's details give a client's own), ` +
      "and all of a tenant's clients together a tenant quota (UPLOAD_BYTES_PER_SECOND_PER_TENANT; details.quota " +
      "says which; a client given a quota of its own above the tenant's is held to its own alone). " +
      'A body is charged before it is read (from Content-Length; a chunked body chunk by chunk as it ' +
      'arrives, cut off past the quota); one that does not fit is answered 429 upload_quota_exceeded with ' +
      'Retry-After, unread. Quotas are shared by all gateway replicas, leased in blocks of a twentieth of a window: ' +
      'a client or tenant spread over several replicas may be refused a little before its quota (never admitted beyond it).',
    '- A request answered before its body was read to the end (401, 403, 413, 415, 429, 503, …) gets Connection: ' +
      'close. A client that writes its whole body before it reads the answer still reads it: the gateway reads and ' +
      `discards what still arrives, at most ${limits.refusedBodyDrain.maxBytes} bytes and ` +
      `${limits.refusedBodyDrain.maxMs} ms after the answer, charged to the upload quota (where it has no room, ` +
      'the discarding waits for its next window within that time), then closes the connection; a longer body, or ' +
      'more refused bodies at once than the quota takes in that time, meets a reset. After a 408 the connection is ' +
      'closed at once.',
    `- Operations with an in-flight limit (inbound, route suggestions) count requests whose body has arrived, per ` +
      `gateway replica; one Integration Client holds at most ${limits.inFlightClientSharePercent}% of the slots, and ` +
      `all of a tenant's clients together at most ${limits.inFlightTenantSharePercent}% (each at least one); beyond, ` +
      '503 service_busy with Retry-After.',
    `- Every operation that reads or writes tenant data holds one of the gateway's database connections while it ` +
      `does: one tenant's requests hold at most ${limits.databaseShare.sharePercent}% of a replica's for reads and short ` +
      `writes and ${limits.databaseShare.edgeSharePercent}% of those for writes handed to Kafka (each at least one), ` +
      `wait beyond that in the tenant's own queue (at most ${limits.databaseShare.queue} requests, 5 s each), and are ` +
      "answered 429 database_share_exceeded with Retry-After past it: one tenant's many requests at once never keep " +
      `another's waiting. A statement past ${limits.databaseShare.statementTimeoutMs} ms is cancelled: 503 ` +
      'service_busy with Retry-After, nothing changed.',
    '',
    '## Media types',
    'Requests: application/json, text/json or application/*+json (else 415). Responses: application/json by default; ' +
      '`Accept: text/json` or `text/plain` returns the same JSON text under that media type.',
    '',
    webhooksDescription,
    '',
    '## Processing (for operators)',
    'A 2xx on a write means the work is durable: the gateway records it in PostgreSQL and hands it to Kafka ' +
      '(acks=all) in one transaction that commits only after the acknowledgement; otherwise 503 with Retry-After. ' +
      'Workers apply it idempotently. Every message carries a versioned envelope ' +
      '`{type, version, tenantId, clientId, producedAt, requestId, correlationId, payload}`. Topics ' +
      `(prefix KAFKA_TOPIC_PREFIX, ${limits.topicPartitions} partitions each; a message that still fails after ` +
      'bounded retries goes to `<topic>.dlq` and its record is marked failed):',
    '',
    ...(Object.keys(topicPurposes) as TopicName[]).map(
      (name) => `- \`${topicNames({ topicPrefix: '<prefix>' })[name]}\`: ${topicPurposes[name]}`,
    ),
    '',
    '## Errors',
    'Two shapes (ApiErrorResponse, ConnectApiErrorResponse) as each operation lists. `error.code` values:',
    '',
    '| code | meaning |',
    '|---|---|',
    codes,
  ].join('\n');
}

export function buildOpenApiDocument(routes: readonly RouteDefinition[], limits: DocumentLimits) {
  const paths: ZodOpenApiPathsObject = {};
  const usedExamples = new Set<string>();
  for (const route of routes) {
    paths[route.path] = { ...paths[route.path], [route.method]: operation(route, usedExamples, limits.bodyLimitBytes) };
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Connect Integration Service',
      version: serviceVersion,
      description: describeService(limits),
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    // Relative: the gateway that serves this document; generated clients take their base URL.
    servers: [{ url: '/', description: 'The gateway serving this document' }],
    tags: [
      ...[...new Set(routes.map((r) => r.tag))].map(tagOf),
      { name: 'Webhooks', description: 'Events POSTed to the endpoints an Integration Client registered.' },
    ],
    paths,
    webhooks: webhookOperations(),
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'Integration API key.' },
        oauth2: {
          type: 'oauth2',
          description:
            'OAuth 2.0 client credentials (RFC 6749 §4.4): client id = Integration Client id, client secret = one of ' +
            'its API keys. Access tokens are JWTs (RFC 9068) sent as `Authorization: Bearer <access token>` on ' +
            `/connect/v1; keys at ${jwksPath}.`,
          flows: { clientCredentials: { tokenUrl: tokenPath, scopes: { ...tokenScopeDescriptions } } },
        },
      },
      examples: errorExamples(usedExamples),
      schemas: {
        ApiErrorResponse: standardErrorSchema,
        ConnectApiErrorResponse: connectErrorSchema,
      },
    },
  });
}
