import type { Server } from 'node:http';
import type { Config } from '../shared/config.js';
import { createPool } from '../shared/db/pool.js';
import { checkTenantScopeRole, createTenantPool } from '../shared/db/tenant-scope.js';
import { createKafkaBus } from '../shared/kafka/bus.js';
import { allTopics } from '../shared/kafka/topics.js';
import type { Logger } from '../shared/logger.js';
import { createApp } from './app.js';
import { createEventWaits } from './events/notifications.js';
import { createBatchPreparer, parseThreadHeapMb } from './inbound/batch-pool.js';
import { resolveMemoryBudget } from './memory/container-limit.js';
import {
  bodyCostFactor,
  createMemoryBudget,
  fixedBytes,
  noMemoryBudget,
  type MemoryBudget,
} from './memory/memory-budget.js';
import { createGatewayMetrics } from './ops/metrics.js';
import { registerTenantShareMetrics } from './ops/tenant-share-metrics.js';
import type { RouteDefinition } from './routes/route-definition.js';

export type RunningGateway = { server: Server; url: string; stop(): Promise<void> };

/** The gateway's composition root: builds pool, Kafka bus, metrics and app, and listens. */
export async function startGateway(
  config: Config,
  logger: Logger,
  extraRoutes: RouteDefinition[] = [],
): Promise<RunningGateway> {
  const poolOptions = {
    onConnectionError: (err: Error) => logger.warn({ err }, 'postgres connection failed'),
    queryTimeoutMs: config.database.queryTimeoutMs,
  };
  // Separate budgets (see WriteDeps): connections waiting for Kafka never starve reads.
  const sizes = splitPoolMax(config.database.poolMax);
  const pool = createPool(config.database.url, sizes.shared, 'connect-gateway', poolOptions);
  // Each tenant holds at most its share of a scoped pool (db/tenant-shares.ts), so one tenant's
  // requests never keep another's waiting for a connection.
  const shares = (sharePercent: number) => ({
    sharePercent,
    queuePerTenant: config.database.tenantQueue,
    waitMs: tenantShareWaitMs,
  });
  const tenantPool = createTenantPool(config.database.url, sizes.tenant, 'connect-gateway-tenant', {
    ...poolOptions,
    shares: shares(config.database.tenantSharePercent),
    // A request's read runs no longer than this: cancelled and answered, not holding a connection.
    // Not on the edge pool: its transactions wait for Kafka between statements, not in one.
    statementTimeoutMs: config.database.statementTimeoutMs,
  });
  const edgePool = createTenantPool(config.database.url, config.database.edgePoolMax, 'connect-gateway-edge', {
    ...poolOptions,
    shares: shares(config.database.edgeTenantSharePercent),
  });
  const endPools = () => Promise.all([pool.end(), tenantPool.end(), edgePool.end()]);
  try {
    await checkTenantScopeRole(pool); // a role that cannot serve tenant data stops the start, with what to grant
  } catch (err) {
    await endPools();
    throw err;
  }
  const metrics = createGatewayMetrics();
  registerTenantShareMetrics(metrics.registry, { tenant: tenantPool, edge: edgePool });
  const bus = createKafkaBus({
    ...config.kafka,
    clientId: `${config.kafka.clientId}-gateway`,
    logger,
    onProduceError: (topic) => metrics.kafkaProduceError(topic),
  });
  bus.declareTopics(allTopics(config.kafka));
  try {
    // Refused credentials or certificates, or managed topics missing: no retry mends that, so the
    // process stops with the reason. A broker that does not answer is waited for as in any outage.
    await bus.checkAtStart(config.kafka.produceTimeoutMs);
  } catch (err) {
    await bus.close();
    await endPools();
    throw err;
  }
  let accepting = true;
  const memory = gatewayMemoryBudget(config, logger);
  const batchPreparer = createBatchPreparer(
    { maxTargets: config.inbound.batchMaxTargets, chunkMaxBytes: config.inbound.chunkMaxBytes },
    config.inbound.parseThreads,
    config.inbound.batchMaxBytes,
  );
  const eventWaits = createEventWaits(
    config.database.url,
    {
      perClient: config.events.feedWaitersPerClient,
      perTenant: config.events.feedWaitersPerTenant,
      max: config.events.feedWaitersMax,
    },
    logger,
    { onLost: (why) => metrics.listenConnectionLost(why) },
  );
  const app = createApp({
    config,
    logger,
    pool,
    tenantPool,
    edgePool,
    batchPreparer,
    bus,
    metrics,
    accepting: () => accepting,
    memory,
    eventWaits,
    extraRoutes,
  });
  const server = app.listen(config.http.port, config.http.host);
  // Longer than any client's idle keep-alive (undici: 4 s, load balancers: 60 s), so a client
  // never reuses a connection the server is closing at that moment (ECONNRESET).
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.http.port;
  const url = `http://${config.http.host === '0.0.0.0' ? '127.0.0.1' : config.http.host}:${port}`;

  return {
    server,
    url,
    async stop() {
      accepting = false;
      // Long-polls answer now (with what they have), then: stop accepting, let in-flight requests
      // finish, flush Kafka and close the pool.
      await eventWaits.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await bus.close();
      memory.stop();
      await Promise.all([endPools(), batchPreparer.close()]);
    },
  };
}

/** How long a request waits in its tenant's queue for a connection: the pools' own wait for one. */
export const tenantShareWaitMs = 5000;

/**
 * DATABASE_POOL_MAX is the gateway's connections besides the edge ones, split: a quarter (at least
 * one) for what works across tenants (authentication, rate limits, health, the event feed's
 * sequencing: caches and leases keep them light), the rest (at least one) scoped to a tenant per
 * request (its reads and short writes). Separate pools, because a scoped connection keeps its role.
 */
export function splitPoolMax(max: number): { shared: number; tenant: number } {
  const shared = Math.max(1, Math.ceil(max / 4));
  return { shared, tenant: Math.max(1, max - shared) };
}

/** GATEWAY_MEMORY_BUDGET_BYTES (auto: the container's limit), announced at start. */
function gatewayMemoryBudget(config: Pick<Config, 'limits' | 'inbound'>, logger: Logger): MemoryBudget {
  const budgetBytes = resolveMemoryBudget(config.limits.memoryBudget);
  if (budgetBytes === null) {
    logger.info({ setting: config.limits.memoryBudget }, 'gateway: no memory budget (no container limit, or off)');
    return noMemoryBudget;
  }
  const memory = createMemoryBudget({
    budgetBytes,
    fixedBytes: fixedBytes(config.inbound.parseThreads, parseThreadHeapMb(config.inbound.batchMaxBytes)),
    clientSharePercent: config.limits.inFlightClientSharePercent,
    tenantSharePercent: config.limits.inFlightTenantSharePercent,
    logger,
  });
  const figures = { budgetBytes, inFlightBytes: memory.inFlightBytes, setting: config.limits.memoryBudget };
  logger.info(figures, 'gateway: memory budget');
  if (memory.inFlightBytes < config.inbound.batchMaxBytes * bodyCostFactor) {
    // Still safe (a request larger than what is left is let in alone), but one at a time.
    logger.warn(figures, 'gateway: the memory budget leaves less than one largest batch costs; give it more memory');
  }
  return memory;
}
