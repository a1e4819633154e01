import { AppError, notFound, unavailable } from '../../../shared/errors.js';
import { rateLimitedError } from '../../rate-limit/rate-limiter.js';
import { renderError, type ErrorShape } from '../../http/error-mapping.js';
import type { RouteAuth } from '../../routes/route-definition.js';

// One example error per documented status, rendered by the same code that renders real errors
// (http/error-mapping.ts), so the examples cannot drift from what clients receive.

const exampleErrors: Record<number, AppError> = {
  400: new AppError('validation_failed', 'The request body is invalid.', {
    externalId: ['Too small: expected string to have >=1 characters'],
    'address.countryCode': ['ISO 3166-1 alpha-2 code in capitals, e.g. DE'],
  }),
  401: new AppError('invalid_credential', 'The API key is not known.'),
  403: new AppError('insufficient_scope', 'This operation needs the scope inbound.targets.batch.write.', null, {
    requiredScope: 'inbound.targets.batch.write',
  }),
  404: notFound('Import job 1842'),
  408: new AppError('request_timeout', 'The body did not arrive within 30000 ms.', null, { deadlineMs: 30_000 }),
  409: new AppError('idempotency_conflict', 'This idempotency key was already used with a different body.'),
  410: new AppError(
    'cursor_expired',
    'The cursor points before the oldest event kept (events are kept 336 hours); read again without after.',
    null,
    { oldestCursor: 'c2.3i' },
  ),
  413: new AppError('payload_too_large', 'The body exceeds the limit of 1048576 bytes.', null, {
    limitBytes: 1_048_576,
  }),
  415: new AppError('unsupported_media_type', 'Only UTF-8 JSON bodies are supported.'),
  422: new AppError('unprocessable', 'The request is well-formed but cannot be carried out.'),
  429: rateLimitedError({ allowed: false, limit: 600, retryAfterSeconds: 12, headers: {} }),
  500: new AppError('internal_error', 'An unexpected error occurred; it is logged with the request id.'),
  503: unavailable('Kafka'),
};

/** Where /connect/v1 operations (OAuth access tokens) answer otherwise. */
const accessTokenErrors: Record<number, AppError> = {
  401: new AppError('expired_token', 'The access token has expired.'),
  403: new AppError('insufficient_scope', 'This operation needs the scope appointments.write.', null, {
    requiredScope: 'appointments.write',
  }),
};

const ids = { requestId: '2f1d9c7a-6b3e-4f08-9a25-d1c4e7b8a603', correlationId: 'erp-run-2026-11-23-0715' };

/** Which example an error answer shows: one per status, shape and (for 401/403) credential kind. */
export function errorExampleName(status: number, shape: ErrorShape, auth: RouteAuth): string {
  const byToken = auth === 'accessToken' && accessTokenErrors[status] !== undefined;
  return `${shape}${byToken ? 'AccessToken' : ''}Error${status}`;
}

/** The example of that name (undefined: none such). */
export function errorExampleOf(name: string): unknown {
  const m = /^(standard|connect)(AccessToken)?Error(\d{3})$/.exec(name);
  if (!m) return undefined;
  const err = (m[2] ? accessTokenErrors : exampleErrors)[Number(m[3])];
  return err ? renderError(err, m[1] as ErrorShape, ids) : undefined;
}
