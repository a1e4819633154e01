// Domain errors carry a stable machine `code` from one catalogue and no HTTP status:
// the gateway maps each kind to a status in exactly one place (gateway/http/error-mapping.ts).

export type ErrorKind =
  | 'invalid'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'too_large'
  | 'request_timeout'
  | 'unsupported_media_type'
  | 'unprocessable'
  | 'gone'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

/** The documented catalogue of `error.code` values (also published in the OpenAPI document). */
export const errorCatalogue = {
  invalid_json: { kind: 'invalid', description: 'The body is not well-formed JSON.' },
  validation_failed: {
    kind: 'invalid',
    description: 'The request (body, path or query) does not match the schema; see fieldErrors/details.',
  },
  missing_credential: { kind: 'unauthenticated', description: 'No Authorization header was sent.' },
  malformed_credential: {
    kind: 'unauthenticated',
    description: 'The Authorization header is not "Bearer <credential>" or the credential has the wrong format.',
  },
  invalid_credential: { kind: 'unauthenticated', description: 'The credential is unknown.' },
  revoked_credential: { kind: 'unauthenticated', description: 'The API key has been revoked.' },
  expired_credential: { kind: 'unauthenticated', description: 'The credential has expired.' },
  invalid_token: {
    kind: 'unauthenticated',
    description:
      'The access token (/connect/v1) is not valid: bad signature or unknown key, wrong typ, issuer or audience, ' +
      'missing claims, or its client no longer exists.',
  },
  expired_token: { kind: 'unauthenticated', description: 'The access token (/connect/v1) has expired; get a new one.' },
  insufficient_scope: {
    kind: 'forbidden',
    description: "The credential is valid but lacks the operation's scope.",
  },
  route_not_found: { kind: 'not_found', description: 'No operation exists at this path.' },
  resource_not_found: {
    kind: 'not_found',
    description: 'The addressed resource does not exist or belongs to another tenant or client.',
  },
  method_not_allowed: {
    kind: 'method_not_allowed',
    description: 'The path exists but not with this HTTP method (see the Allow header).',
  },
  idempotency_conflict: {
    kind: 'conflict',
    description: 'The idempotency key was already used with a different request body.',
  },
  invalid_state_transition: {
    kind: 'conflict',
    description: 'The resource is in a status from which this operation is not allowed (see details).',
  },
  already_cancelled: {
    kind: 'conflict',
    description: 'The appointment request was already cancelled under another Idempotency-Key (details.cancelledAt).',
  },
  inventory_reference_invalid: {
    kind: 'invalid',
    description:
      'The body is well-formed but names an inventory item or location the tenant does not have, or a unit that is ' +
      "not the item's unit of measure; see fieldErrors.",
  },
  import_job_not_finished: {
    kind: 'conflict',
    description: 'The import job is still Queued or Processing; retry when it is final.',
  },
  computation_budget_exceeded: {
    kind: 'unprocessable',
    description:
      'The draft could not be computed within ROUTE_SUGGESTION_BUDGET_MS; use fewer targets (split the import job) or vehicles.',
  },
  no_routable_targets: {
    kind: 'unprocessable',
    description: 'The import job has no target that can be routed (none with coordinates on that day).',
  },
  webhook_endpoint_limit: {
    kind: 'conflict',
    description: 'The client has as many webhook endpoints as it may (WEBHOOK_ENDPOINTS_PER_CLIENT); delete one first.',
  },
  cursor_expired: {
    kind: 'gone',
    description:
      'The event feed cursor points before the oldest event kept (EVENT_RETENTION_HOURS): events after it were ' +
      'pruned. Start again without `after` (details.oldestCursor) and reconcile from the resources themselves.',
  },
  too_many_waiting: {
    kind: 'rate_limited',
    description:
      'The client (or its tenant) already has as many long-polls waiting on this gateway as it may ' +
      '(EVENT_FEED_WAITERS_PER_CLIENT, _PER_TENANT, _MAX); retry after Retry-After seconds, or without `wait`.',
  },
  payload_too_large: { kind: 'too_large', description: 'The body exceeds the documented size limit.' },
  request_timeout: {
    kind: 'request_timeout',
    description: 'The body did not arrive within the documented deadline (BODY_READ_TIMEOUT_MS); send it faster.',
  },
  unsupported_media_type: {
    kind: 'unsupported_media_type',
    description: 'The request body media type is not application/json, text/json or application/*+json.',
  },
  unprocessable: { kind: 'unprocessable', description: 'The request is well-formed but cannot be carried out.' },
  rate_limited: {
    kind: 'rate_limited',
    description: 'The Integration Client exceeded its rate limit; retry after Retry-After seconds.',
  },
  upload_quota_exceeded: {
    kind: 'rate_limited',
    description:
      'The Integration Client (details.quota client) or its tenant (tenant) sent more body bytes than its upload ' +
      'quota (UPLOAD_BYTES_PER_SECOND, UPLOAD_BYTES_PER_SECOND_PER_TENANT, across all gateway replicas); the rest of the body ' +
      'was not read and the connection is closed. Retry after Retry-After seconds.',
  },
  memory_share_exceeded: {
    kind: 'rate_limited',
    description:
      "The Integration Client's (details.share client) or its tenant's (tenant) share of the gateway's memory for " +
      'requests in flight (GATEWAY_MEMORY_BUDGET_BYTES, IN_FLIGHT_CLIENT_SHARE_PERCENT, IN_FLIGHT_TENANT_SHARE_PERCENT) ' +
      'is held by its other requests; the body was not read and the connection is closed. Retry after Retry-After seconds.',
  },
  database_share_exceeded: {
    kind: 'rate_limited',
    description:
      "The tenant's requests hold its share of the gateway's database connections (DATABASE_TENANT_SHARE_PERCENT) " +
      'and its queue for more is full (DATABASE_TENANT_QUEUE) or this request waited in it as long as it may; ' +
      'nothing was done. Retry after Retry-After seconds, or send fewer requests at once.',
  },
  service_unavailable: {
    kind: 'unavailable',
    description: 'A dependency (PostgreSQL or Kafka) cannot take the work now; nothing was accepted. Retry later.',
  },
  service_busy: {
    kind: 'unavailable',
    description:
      'The gateway has no capacity for this request now (every in-flight slot or write connection is in use, the ' +
      "client's or its tenant's share of the slots, or its memory budget) while " +
      'its dependencies answer; nothing was accepted. Retry after Retry-After seconds.',
  },
  internal_error: { kind: 'internal', description: 'An unexpected error; it is logged with the request id.' },
} as const satisfies Record<string, { kind: ErrorKind; description: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export type FieldErrors = Record<string, string[]>;

export class AppError extends Error {
  readonly kind: ErrorKind;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fieldErrors: FieldErrors | null = null,
    readonly details: Record<string, unknown> | null = null,
    /** Seconds after which a retry may succeed (rate limit, unavailable). */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.kind = errorCatalogue[code].kind;
  }
}

export const notFound = (what: string) => new AppError('resource_not_found', `${what} was not found.`);

/** 503 service_unavailable: a dependency cannot take the work; a retry after 5 s may succeed. */
export const unavailable = (what: string) =>
  new AppError('service_unavailable', `${what} is unavailable; nothing was accepted. Retry later.`, null, null, 5);

/** 503 service_busy: more work than capacity, the dependencies answer. */
export const busy = (what: string) =>
  new AppError('service_busy', `${what}; nothing was accepted. Retry shortly.`, null, null, 1);
