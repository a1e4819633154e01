import type { ParameterizedContext } from 'koa';
import type { AppError } from '../../shared/errors.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';

/** What the middleware chain learns about a request, in ctx.state. */
export type GatewayState = {
  requestId: string;
  correlationId: string;
  startedAt: bigint;
  /** The matched route's template (e.g. /api/v1/import-jobs/{id}), for logs and metrics. */
  routeTemplate?: string;
  /** Statuses this route answers in the Connect error shape. */
  connectErrorStatuses?: readonly number[];
  /** The route's own body for an error status it documents in a shape of its own (else undefined). */
  errorBody?: (err: AppError, status: number) => unknown;
  /** Response media types this route documents (default: the JSON trio), for Accept. */
  responseMediaTypes?: readonly string[];
  client?: AuthenticatedClient;
  /** The client disconnected before its answer (logged and counted as 499). */
  clientLeft?: boolean;
};

export type GatewayContext = ParameterizedContext<GatewayState>;
