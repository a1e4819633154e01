import type { Middleware } from 'koa';
import type { Logger } from '../../shared/logger.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import { clientClosedRequest } from './client-left.js';
import type { GatewayState } from './state.js';

/** One JSON line per request, and the request metrics. Never logs headers or bodies. */
export const accessLog =
  (logger: Logger, metrics: GatewayMetrics): Middleware<GatewayState> =>
  async (ctx, next) => {
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - ctx.state.startedAt) / 1e9;
      const route = ctx.state.routeTemplate ?? 'unmatched';
      const status = ctx.state.clientLeft ? clientClosedRequest : ctx.status;
      metrics.observeRequest(ctx.method, route, status, seconds);
      logger.info(
        {
          requestId: ctx.state.requestId,
          correlationId: ctx.state.correlationId,
          clientId: ctx.state.client?.clientId ?? null,
          method: ctx.method,
          route,
          status,
          durationMs: Math.round(seconds * 1e6) / 1e3,
        },
        'request',
      );
    }
  };
