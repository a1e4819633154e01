import type { AppError, ErrorKind } from '../../shared/errors.js';
import type { ConnectErrorBody, StandardErrorBody } from './error-shapes.js';

// The one mapping from domain error kinds to HTTP statuses.
export const statusOfKind: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  too_large: 413,
  request_timeout: 408,
  unsupported_media_type: 415,
  unprocessable: 422,
  gone: 410,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
};

export type ErrorShape = 'standard' | 'connect';

export function renderError(
  err: AppError,
  shape: ErrorShape,
  ids: { requestId: string; correlationId: string },
): StandardErrorBody | ConnectErrorBody {
  if (shape === 'connect') {
    const details = err.fieldErrors
      ? Object.entries(err.fieldErrors).flatMap(([field, messages]) => messages.map((message) => ({ field, message })))
      : Array.isArray(err.details)
        ? (err.details as ConnectErrorBody['error']['details'])
        : null;
    return {
      error: {
        code: err.code,
        message: err.message,
        details,
        requestId: ids.requestId,
        correlationId: ids.correlationId,
      },
    };
  }
  return {
    error: {
      code: err.code,
      message: err.message,
      correlationId: ids.correlationId,
      fieldErrors: err.fieldErrors,
      details: err.details ?? null,
    },
  };
}
