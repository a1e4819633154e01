import Router from '@koa/router';
import { AppError } from '../../shared/errors.js';
import type { Authenticator } from '../auth/authenticate.js';
import { scopeOf } from '../auth/route-scopes.js';
import { readJsonBody } from '../http/body.js';
import { sendJson } from '../http/negotiate.js';
import type { GatewayContext, GatewayState } from '../http/state.js';
import { parseOrThrow } from '../http/validate.js';
import { rateLimitedError, type RateLimiter } from '../rate-limit/rate-limiter.js';
import type { RouteDefinition } from './route-definition.js';

export type PipelineDeps = {
  authenticate: Authenticator;
  /** For auth 'accessToken' routes (/connect/v1): OAuth2 bearer access tokens. */
  authenticateAccessToken: Authenticator;
  rateLimit: RateLimiter;
  defaultRateLimitPerMinute: number;
  bodyLimitBytes: number;
};

const koaPath = (template: string) => template.replace(/\{(\w+)\}/g, ':$1');

/**
 * Mounts every route behind the same pipeline: authenticate → scope → rate limit →
 * body (media type, size, JSON) → validate path, query and body → handler.
 */
export function buildRouter(routes: readonly RouteDefinition[], deps: PipelineDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const inFlight = new Map<string, number>(); // requests being worked on, per in-flight group
  for (const route of routes) {
    const scope = scopeOf(route.method, route.path);
    if (route.auth !== 'none' && !scope)
      throw new Error(`no scope in route-scopes.ts for ${route.method} ${route.path}`);
    const group = route.inFlightGroup ?? route.operationId;
    router[route.method](koaPath(route.path), async (ctx: GatewayContext) => {
      ctx.state.routeTemplate = route.path;
      ctx.state.connectErrorStatuses = route.connectErrorStatuses;
      if (route.auth !== 'none') {
        const bearerToken = route.auth === 'accessToken';
        const client = await (bearerToken ? deps.authenticateAccessToken : deps.authenticate)(
          ctx.get('authorization'),
        ).catch((err: unknown) => {
          if (bearerToken && err instanceof AppError && err.kind === 'unauthenticated') {
            // RFC 6750 §3: tell the client what to send.
            const missing = err.code === 'missing_credential';
            ctx.set('WWW-Authenticate', `Bearer realm="connect"${missing ? '' : ', error="invalid_token"'}`);
          }
          throw err;
        });
        ctx.state.client = client;
        if (!client.scopes.has(scope!)) {
          if (bearerToken) {
            ctx.set('WWW-Authenticate', `Bearer realm="connect", error="insufficient_scope", scope="${scope}"`);
          }
          throw new AppError('insufficient_scope', `This operation needs the scope ${scope}.`, null, {
            requiredScope: scope,
          });
        }
        const decision = await deps.rateLimit(
          client.clientId,
          client.rateLimitPerMinute ?? deps.defaultRateLimitPerMinute,
        );
        ctx.set(decision.headers);
        if (!decision.allowed) throw rateLimitedError(decision);
      }
      if (route.maxInFlight !== undefined && (inFlight.get(group) ?? 0) >= route.maxInFlight) {
        throw new AppError(
          'service_unavailable',
          'The gateway is at capacity for this operation; retry shortly.',
          null,
          null,
          1,
        );
      }
      inFlight.set(group, (inFlight.get(group) ?? 0) + 1);
      try {
        await handle(ctx, route);
      } finally {
        inFlight.set(group, inFlight.get(group)! - 1);
      }
    });
  }
  return router;

  async function handle(ctx: GatewayContext, route: RouteDefinition) {
    const params = route.params ? parseOrThrow(route.params, ctx.params, 'path') : undefined;
    const query = route.query ? parseOrThrow(route.query, ctx.query, 'query') : undefined;
    let body: unknown;
    if (route.body || route.parseBody) {
      const raw = await readJsonBody(ctx, route.bodyLimitBytes ?? deps.bodyLimitBytes, route.requestMediaTypes);
      body = route.parseBody ? route.parseBody(raw) : parseOrThrow(route.body!, raw, 'body');
    }
    const result = await route.handler({
      params,
      query,
      body,
      client: ctx.state.client!,
      requestId: ctx.state.requestId,
      correlationId: ctx.state.correlationId,
      header: (name) => ctx.get(name),
    });
    if (result.headers) ctx.set(result.headers);
    if (typeof result.body === 'string') {
      ctx.status = result.status;
      ctx.body = result.body;
    } else {
      sendJson(ctx, result.status, result.body);
    }
  }
}
