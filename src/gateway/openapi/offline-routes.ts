import { loadConfig } from '../../shared/config.js';
import { createPool } from '../../shared/db/pool.js';
import { createTenantPool } from '../../shared/db/tenant-scope.js';
import { createKafkaBus } from '../../shared/kafka/bus.js';
import { createLogger } from '../../shared/logger.js';
import { allRoutes } from '../app.js';
import { createGatewayMetrics } from '../ops/metrics.js';
import { noMemoryBudget } from '../memory/memory-budget.js';
import type { BatchPreparer } from '../inbound/batch-pool.js';
import { noEventWaits } from '../events/notifications.js';
import type { RouteDefinition } from '../routes/route-definition.js';

// Nothing listens on port 1: a dependency touched by mistake fails instead of reaching a real one.
const nowhere = 'postgres://openapi@127.0.0.1:1/openapi';

/**
 * The gateway's route definitions, built without connecting to PostgreSQL or Kafka (for printing
 * the OpenAPI document and checking it). Limits follow the environment, as the served document's do.
 */
export function offlineRoutes(): { routes: RouteDefinition[]; close(): Promise<void> } {
  const config = loadConfig({ ...process.env, DATABASE_URL: nowhere, KAFKA_BROKERS: '127.0.0.1:1' });
  const logger = createLogger('silent', 'openapi');
  const pool = createPool(nowhere, 1, 'openapi');
  const tenantPool = createTenantPool(nowhere, 1, 'openapi');
  const bus = createKafkaBus({ brokers: config.kafka.brokers, clientId: 'openapi', logger });
  const unused = (): never => {
    throw new Error('not available while printing the document');
  };
  const batchPreparer: BatchPreparer = { prepare: unused, close: async () => undefined };
  const { routes } = allRoutes({
    config,
    logger,
    pool,
    tenantPool,
    edgePool: tenantPool,
    batchPreparer,
    memory: noMemoryBudget,
    bus,
    metrics: createGatewayMetrics(),
    accepting: () => false,
    eventWaits: noEventWaits,
  });
  return {
    routes,
    close: async () => {
      await Promise.allSettled([pool.end(), tenantPool.end(), bus.close()]);
    },
  };
}

/** The OpenAPI document as /openapi.json serves it. */
export async function offlineDocument(routes: RouteDefinition[]): Promise<unknown> {
  const ops = routes.find((r) => r.path === '/openapi.json')!;
  const { body } = await ops.handler({} as never);
  return JSON.parse(body as string) as unknown; // served as text, made once
}
