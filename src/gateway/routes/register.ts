import Router from '@koa/router';
import { AppError, busy, type FieldErrors } from '../../shared/errors.js';
import { unstorableReason } from '../http/storable.js';
import type { Authenticator } from '../auth/authenticate.js';
import { createFailedAuthLimiter } from '../auth/failed-auth-limiter.js';
import { scopeOf } from '../auth/route-scopes.js';
import { expectedBodyBytes, readJsonBody, readRawBody } from '../http/body.js';
import { refuseUnstorableBody } from '../http/json-text.js';
import { sendJson } from '../http/negotiate.js';
import type { GatewayContext, GatewayState } from '../http/state.js';
import { parseOrThrow } from '../http/validate.js';
import { InFlightSlots } from '../http/in-flight.js';
import { rateLimitedError, type RateLimiter } from '../rate-limit/rate-limiter.js';
import { uploaderOf, type UploadQuota } from '../rate-limit/upload-quota.js';
import { ClientLeftError } from '../http/client-left.js';
import type { MemoryBudget } from '../memory/memory-budget.js';
import type { RouteDefinition } from './route-definition.js';

export type PipelineDeps = {
  authenticate: Authenticator;
  /** For auth 'accessToken' routes (/connect/v1): OAuth2 bearer access tokens. */
  authenticateAccessToken: Authenticator;
  rateLimit: RateLimiter;
  defaultRateLimitPerMinute: number;
  bodyLimitBytes: number;
  bodyReadTimeoutMs: number;
  uploadQuota: UploadQuota;
  /** Refused credentials one address may send per minute before they are answered 429 (valid ones never are). */
  authFailuresPerMinute: number;
  /** Share of an operation's in-flight slots one client may hold (percent; at least one slot). */
  inFlightClientSharePercent: number;
  /** The same for all of one tenant's clients together. */
  inFlightTenantSharePercent: number;
  /** What a body will hold is reserved here before it is read (503 / 429 when it does not fit). */
  memory: MemoryBudget;
};

const koaPath = (template: string) => template.replace(/\{(\w+)\}/g, ':$1');

const atCapacity = () => busy('The gateway is at capacity for this operation');

/** Path and query values PostgreSQL could not store are a 400 here, not a failure later. */
function refuseUnstorable(values: Record<string, unknown>, root: string): void {
  const errors: FieldErrors = Object.create(null);
  for (const [name, value] of Object.entries(values)) {
    for (const text of Array.isArray(value) ? value : [value]) {
      const reason = typeof text === 'string' ? unstorableReason(text) : null;
      if (reason) (errors[`${root}.${name}`] ??= []).push(reason);
    }
  }
  if (Object.keys(errors).length > 0)
    throw new AppError('validation_failed', `The request ${root} is invalid.`, errors);
}

/**
 * Mounts every route behind the same pipeline: authenticate → scope → rate limit → memory for
 * the body (memory/memory-budget.ts) → validate path and query → body (media type, size, upload
 * quota, deadline, JSON) → validate body → in-flight slot → handler.
 */
export function buildRouter(routes: readonly RouteDefinition[], deps: PipelineDeps): Router<GatewayState> {
  const router = new Router<GatewayState>();
  const slots = new InFlightSlots({
    client: { percent: deps.inFlightClientSharePercent },
    tenant: { percent: deps.inFlightTenantSharePercent },
  });
  const failedAuth = createFailedAuthLimiter(deps.authFailuresPerMinute);
  for (const route of routes) {
    const scope = scopeOf(route.method, route.path);
    if (route.auth !== 'none' && !scope)
      throw new Error(`no scope in route-scopes.ts for ${route.method} ${route.path}`);
    const group = route.inFlightGroup ?? route.operationId;
    router[route.method](koaPath(route.path), async (ctx: GatewayContext) => {
      ctx.state.routeTemplate = route.path;
      ctx.state.connectErrorStatuses = route.connectErrorStatuses;
      ctx.state.responseMediaTypes = route.responseMediaTypes;
      ctx.state.errorBody = route.errorBody;
      if (route.auth !== 'none') {
        const bearerToken = route.auth === 'accessToken';
        const client = await (bearerToken ? deps.authenticateAccessToken : deps.authenticate)(
          ctx.get('authorization'),
        ).catch(async (refusedErr: unknown) => {
          const err = await failedAuth.refusal(ctx.ip, refusedErr);
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
      const holder = { client: ctx.state.client?.clientId ?? ctx.ip, tenant: ctx.state.client?.tenantId };
      const takesBody = Boolean(route.parseRawBody || route.body || route.parseBody);
      // Held from before the body is read until the answer: the body, what is parsed and produced from it.
      const memory = takesBody
        ? deps.memory.admitBody(holder, expectedBodyBytes(ctx, route.bodyLimitBytes ?? deps.bodyLimitBytes))
        : null;
      try {
        const input = await readInput(ctx, route);
        // Slots count requests whose body has arrived, so a slow sender holds none while it sends.
        const release = route.maxInFlight === undefined ? null : slots.take(group, holder, route.maxInFlight);
        if (release === false) throw atCapacity();
        try {
          await handle(ctx, route, input);
        } finally {
          if (release) release();
        }
      } finally {
        memory?.();
      }
    });
  }
  return router;

  async function readInput(ctx: GatewayContext, route: RouteDefinition) {
    if (route.params) refuseUnstorable(ctx.params, 'path');
    if (route.query) refuseUnstorable(ctx.query, 'query');
    const params = route.params ? parseOrThrow(route.params, ctx.params, 'path') : undefined;
    const query = route.query ? parseOrThrow(route.query, ctx.query, 'query') : undefined;
    let body: unknown;
    // Only routes that take a body (most requests are reads) look up the client's upload quota.
    const limits = () => ({
      limitBytes: route.bodyLimitBytes ?? deps.bodyLimitBytes,
      deadlineMs: deps.bodyReadTimeoutMs,
      quota: deps.uploadQuota(uploaderOf(ctx)),
    });
    if (route.parseRawBody) {
      body = await route.parseRawBody(await readRawBody(ctx, limits()));
    } else if (route.body || route.parseBody) {
      const raw = await readJsonBody(ctx, limits(), route.requestMediaTypes);
      refuseUnstorableBody(raw.unstorable);
      body = route.parseBody
        ? route.parseBody(raw.value, { bytes: raw.bytes })
        : parseOrThrow(route.body!, raw.value, 'body');
    }
    return { params, query, body };
  }

  async function handle(
    ctx: GatewayContext,
    route: RouteDefinition,
    input: { params: unknown; query: unknown; body: unknown },
  ) {
    // The client leaving before its answer is sent aborts the handler's long work.
    const left = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) left.abort(new ClientLeftError());
    });
    const result = await route.handler({
      ...input,
      signal: left.signal,
      client: ctx.state.client!,
      requestId: ctx.state.requestId,
      correlationId: ctx.state.correlationId,
      header: (name) => ctx.get(name),
      remoteAddress: ctx.ip,
    });
    if (result.headers) ctx.set(result.headers);
    if (result.status === 204) {
      ctx.status = 204;
    } else if (typeof result.body === 'string') {
      ctx.status = result.status;
      ctx.body = result.body;
    } else {
      sendJson(ctx, result.status, result.body);
    }
  }
}
