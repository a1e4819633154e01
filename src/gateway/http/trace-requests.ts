import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import { withCorrelation } from '../../shared/tracing/context.js';
import type { GatewayState } from './state.js';

/**
 * A server span per request (continuing a client's `traceparent`), active with the request's
 * correlation id for everything the request does: its log lines carry both ids, and the
 * messages it produces carry them to the workers (shared/tracing/context.ts).
 */
export const traceRequests = (): Middleware<GatewayState> => {
  const tracer = trace.getTracer('connect-gateway');
  return async (ctx, next) => {
    const parent = withCorrelation(propagation.extract(context.active(), ctx.headers), ctx.state.correlationId);
    const span = tracer.startSpan(
      ctx.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path } },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route = ctx.state.routeTemplate;
      if (route) {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', ctx.status);
      span.setAttribute('connect.correlation_id', ctx.state.correlationId);
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
};
