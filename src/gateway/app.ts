import Koa from 'koa';
import type { Config } from '../shared/config.js';
import type { Pool } from '../shared/db/pool.js';
import type { TenantPool } from '../shared/db/tenant-scope.js';
import type { MessageBus } from '../shared/kafka/bus.js';
import type { Logger } from '../shared/logger.js';
import { appointmentRoutes } from './appointments/routes.js';
import { createApiKeyAuthenticator } from './auth/authenticate.js';
import { createKeyRecords, type KeyRecords } from './auth/key-records.js';
import { docsRoutes } from './docs/routes.js';
import { downloadRoutes } from './downloads/routes.js';
import { createDependencyChecks } from './health/checks.js';
import { healthRoutes } from './health/routes.js';
import { accessLog } from './http/access-log.js';
import { closeWhenBodyUnread } from './http/body.js';
import { delayEarlyRetries } from './http/early-retry-delay.js';
import { errorHandler } from './http/error-handler.js';
import { requestContext } from './http/request-context.js';
import { traceRequests } from './http/trace-requests.js';
import type { GatewayState } from './http/state.js';
import { eventRoutes } from './events/routes.js';
import type { EventWaits } from './events/notifications.js';
import { importJobRoutes } from './import-jobs/routes.js';
import type { BatchPreparer } from './inbound/batch-pool.js';
import { inboundRoutes } from './inbound/routes.js';
import { inventoryRoutes } from './inventory/routes.js';
import { jobRoutes } from './jobs/routes.js';
import { materialRoutes } from './materials/routes.js';
import { createOAuth, type OAuth } from './oauth/service.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { routeSuggestionRoutes } from './route-suggestions/routes.js';
import type { MemoryBudget } from './memory/memory-budget.js';
import type { GatewayMetrics } from './ops/metrics.js';
import { opsRoutes } from './ops/routes.js';
import { createRateLimiter } from './rate-limit/rate-limiter.js';
import { createUploadQuota, largestBody, uploaderOf, uploadWindow } from './rate-limit/upload-quota.js';
import { buildRouter } from './routes/register.js';
import { webhookEndpointRoutes } from './webhooks/routes.js';
import type { RouteDefinition } from './routes/route-definition.js';

export type AppDeps = {
  config: Config;
  logger: Logger;
  /** Connections for what works across tenants: authentication, rate limits, health. */
  pool: Pool;
  /** Connections scoped to a tenant per request: its reads and short writes (see WriteDeps). */
  tenantPool: TenantPool;
  /** Scoped connections of edge transactions that wait for Kafka (see WriteDeps). */
  edgePool: TenantPool;
  /** Prepares large inbound batches off the event loop. */
  batchPreparer: BatchPreparer;
  bus: MessageBus;
  metrics: GatewayMetrics;
  accepting: () => boolean;
  /** Memory reserved per request before its body is read or its draft computed. */
  memory: MemoryBudget;
  /** Long-polls of the event feed (one LISTEN connection per gateway). */
  eventWaits: EventWaits;
  /** Operations added by the embedder (tests add probe routes); documented like the rest. */
  extraRoutes?: RouteDefinition[];
};

/**
 * Every operation the gateway serves (the OpenAPI document is generated from this list), and
 * what authenticates their callers: the key records are shared, as API keys and OAuth client
 * secrets are the same keys.
 */
export function allRoutes(deps: AppDeps): { routes: RouteDefinition[]; keyRecords: KeyRecords; oauth: OAuth } {
  const keyRecords = createKeyRecords(deps.pool);
  const oauth = createOAuth({ ...deps, keyRecords });
  const check = createDependencyChecks(deps.pool, deps.bus, deps.config.service.healthCheckTimeoutMs);
  deps.metrics.watchDependencies(check);
  let document: unknown;
  const routes: RouteDefinition[] = [
    ...healthRoutes(check),
    ...inventoryRoutes(deps.tenantPool),
    ...inboundRoutes(deps, deps.batchPreparer),
    ...importJobRoutes(deps.tenantPool, deps.config.inbound),
    ...jobRoutes(deps),
    ...routeSuggestionRoutes(deps.tenantPool, deps.config.routeSuggestions, deps.memory),
    ...materialRoutes(deps),
    ...oauth.routes(),
    ...appointmentRoutes(deps),
    ...webhookEndpointRoutes(deps.tenantPool, deps.config.webhooks),
    ...eventRoutes(deps.pool, deps.tenantPool, deps.config.events, deps.eventWaits),
    ...(deps.extraRoutes ?? []),
    ...opsRoutes({
      check,
      metrics: deps.metrics,
      accepting: deps.accepting,
      openApiDocument: () =>
        (document ??= buildOpenApiDocument(routes, {
          rateLimitPerMinute: deps.config.limits.rateLimitPerMinute,
          bodyLimitBytes: deps.config.http.bodyLimitBytes,
          bodyReadTimeoutMs: deps.config.http.bodyReadTimeoutMs,
          inFlightClientSharePercent: deps.config.limits.inFlightClientSharePercent,
          inFlightTenantSharePercent: deps.config.limits.inFlightTenantSharePercent,
          databaseShare: {
            sharePercent: deps.config.database.tenantSharePercent,
            edgeSharePercent: deps.config.database.edgeTenantSharePercent,
            queue: deps.config.database.tenantQueue,
            statementTimeoutMs: deps.config.database.statementTimeoutMs,
          },
          uploadWindow: uploadWindow(
            deps.config.limits.uploadBytesPerSecond,
            largestBody(routes, deps.config.http.bodyLimitBytes),
          ),
          refusedBodyDrain: {
            maxBytes: deps.config.limits.refusedBodyDrainBytes,
            maxMs: deps.config.limits.refusedBodyDrainMs,
          },
          topicPartitions: deps.config.kafka.topicPartitions,
        })),
    }),
    ...docsRoutes(),
    ...downloadRoutes(),
  ];
  return { routes, keyRecords, oauth };
}

export function createApp(deps: AppDeps): Koa<GatewayState> {
  // Behind TRUSTED_PROXIES proxies that each append the address they saw to X-Forwarded-For, the
  // client's address is the entry that many from the right (ctx.ip); entries further left are the
  // client's own say. With 0 the header is ignored and ctx.ip is the TCP peer.
  const trustedProxies = deps.config.http.trustedProxies;
  const app = new Koa<GatewayState>({
    proxy: trustedProxies > 0,
    proxyIpHeader: 'X-Forwarded-For',
    maxIpsCount: trustedProxies,
  });
  app.silent = true; // errors are logged by errorHandler, with the request id
  const { routes, keyRecords, oauth } = allRoutes(deps);
  const uploadQuota = createUploadQuota(
    {
      clientBytesPerSecond: deps.config.limits.uploadBytesPerSecond,
      tenantBytesPerSecond: deps.config.limits.uploadBytesPerSecondPerTenant,
      largestBodyBytes: largestBody(routes, deps.config.http.bodyLimitBytes),
    },
    deps.pool,
  );
  const router = buildRouter(routes, {
    authenticate: createApiKeyAuthenticator(keyRecords, deps.config.auth.cacheTtlMs),
    authenticateAccessToken: oauth.authenticate,
    rateLimit: createRateLimiter(deps.pool, deps.config.limits.rateLimitLeaseMax),
    defaultRateLimitPerMinute: deps.config.limits.rateLimitPerMinute,
    bodyLimitBytes: deps.config.http.bodyLimitBytes,
    bodyReadTimeoutMs: deps.config.http.bodyReadTimeoutMs,
    uploadQuota,
    inFlightClientSharePercent: deps.config.limits.inFlightClientSharePercent,
    inFlightTenantSharePercent: deps.config.limits.inFlightTenantSharePercent,
    authFailuresPerMinute: deps.config.auth.failuresPerMinute,
    memory: deps.memory,
  });
  // Once stopping, every response ends its connection: server.close() waits for open connections,
  // and the keep-alive connection of a request still in flight at SIGTERM (a slow upload) would
  // otherwise hold the process until SHUTDOWN_TIMEOUT_MS (exit 1). Seen in test/image.
  app.use(async (ctx, next) => {
    try {
      await next();
    } finally {
      if (!deps.accepting()) ctx.set('Connection', 'close');
    }
  });
  app.use(requestContext());
  app.use(traceRequests()); // outside the access log, so its line carries the trace id
  app.use(accessLog(deps.logger, deps.metrics));
  // What a client still sends after a refusal is read for a bounded while and charged as a body
  // of the client (or address) the refusal answered.
  app.use(
    closeWhenBodyUnread(
      { maxBytes: deps.config.limits.refusedBodyDrainBytes, maxMs: deps.config.limits.refusedBodyDrainMs },
      (ctx) => uploadQuota(uploaderOf(ctx)),
    ),
  );
  app.use(delayEarlyRetries());
  app.use(errorHandler(deps.logger));
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
