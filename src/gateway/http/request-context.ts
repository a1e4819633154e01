import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { GatewayState } from './state.js';

// A client's X-Correlation-Id is kept when it is a sane token; otherwise one is made.
const correlationIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

export const requestContext = (): Middleware<GatewayState> => async (ctx, next) => {
  const incoming = ctx.get('x-correlation-id');
  ctx.state.requestId = randomUUID();
  ctx.state.correlationId = correlationIdPattern.test(incoming) ? incoming : randomUUID();
  ctx.state.startedAt = process.hrtime.bigint();
  ctx.set('X-Request-Id', ctx.state.requestId);
  ctx.set('X-Correlation-Id', ctx.state.correlationId);
  await next();
};
