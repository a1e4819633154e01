import type { Middleware } from 'koa';
import { isPostgresUnavailable } from '../../shared/db/errors.js';
import { AppError, busy, unavailable } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { ClientLeftError } from './client-left.js';
import { renderError, statusOfKind } from './error-mapping.js';
import { sendJson } from './negotiate.js';
import type { GatewayState } from './state.js';

/** Turns anything thrown below into one of the two documented error bodies. */
export const errorHandler =
  (logger: Logger): Middleware<GatewayState> =>
  async (ctx, next) => {
    try {
      await next();
      if (ctx.body == null && ctx.status === 404) {
        throw new AppError('route_not_found', `No operation at ${ctx.method} ${ctx.path}.`);
      }
      if (ctx.body == null && (ctx.status === 405 || ctx.status === 501)) {
        // @koa/router's allowedMethods has set the Allow header.
        throw new AppError('method_not_allowed', `${ctx.method} is not supported here; see the Allow header.`);
      }
    } catch (thrown) {
      if (thrown instanceof ClientLeftError) {
        ctx.state.clientLeft = true; // no one to answer; the access log records 499
        return;
      }
      const err = toAppError(thrown);
      const status = statusOfKind[err.kind];
      if (status >= 500 && err.kind === 'internal') {
        logger.error(
          { err: thrown, requestId: ctx.state.requestId, correlationId: ctx.state.correlationId },
          'unhandled error',
        );
      }
      if (err.retryAfterSeconds !== null) ctx.set('Retry-After', String(err.retryAfterSeconds));
      const own = ctx.state.errorBody?.(err, status);
      if (own !== undefined) return sendJson(ctx, status, own);
      const shape = ctx.state.connectErrorStatuses?.includes(status) ? 'connect' : 'standard';
      sendJson(ctx, status, renderError(err, shape, ctx.state));
    }
  };

function toAppError(thrown: unknown): AppError {
  if (thrown instanceof AppError) return thrown;
  // Any path that meets PostgreSQL not serving writes (unreachable, read-only during a failover:
  // isPostgresUnavailable) answers 503 + Retry-After, never 500.
  if (isPostgresUnavailable(thrown)) return unavailable('PostgreSQL');
  // The request's statement ran past DATABASE_STATEMENT_TIMEOUT_MS and PostgreSQL cancelled it:
  // PostgreSQL serves, but not this request now.
  if ((thrown as { code?: unknown } | null)?.code === '57014') {
    return busy('PostgreSQL took longer than DATABASE_STATEMENT_TIMEOUT_MS for this request and stopped it');
  }
  return new AppError('internal_error', 'An unexpected error occurred; it was logged with the request id.');
}
