// `npm run --silent openapi > openapi.json`: the OpenAPI document the gateway serves at
// /openapi.json, built from the same route definitions without starting anything or connecting
// to PostgreSQL or Kafka (for client generation and linting). Limits in it follow the
// environment, as the served one does.
import { loadConfig } from '../../shared/config.js';
import { createPool } from '../../shared/db/pool.js';
import { createKafkaBus } from '../../shared/kafka/bus.js';
import { createLogger } from '../../shared/logger.js';
import { allRoutes } from '../app.js';
import { createGatewayMetrics } from '../ops/metrics.js';
import type { BatchPreparer } from '../inbound/batch-pool.js';

// Nothing listens on port 1: a dependency touched by mistake fails instead of reaching a real one.
const nowhere = 'postgres://openapi@127.0.0.1:1/openapi';
const config = loadConfig({ ...process.env, DATABASE_URL: nowhere, KAFKA_BROKERS: '127.0.0.1:1' });
const logger = createLogger('silent', 'openapi');
const pool = createPool(nowhere, 1, 'openapi');
const bus = createKafkaBus({ brokers: config.kafkaBrokers, clientId: 'openapi', logger });
const unused = (): never => {
  throw new Error('not available while printing the document');
};
const batchPreparer: BatchPreparer = { prepare: unused, close: async () => undefined };
const routes = allRoutes({
  config,
  logger,
  pool,
  edgePool: pool,
  batchPreparer,
  bus,
  metrics: createGatewayMetrics(),
  accepting: () => false,
});
const ops = routes.find((r) => r.path === '/openapi.json')!;
const { body } = (await ops.handler({} as never)) as { body: unknown };
await Promise.allSettled([pool.end(), bus.close()]);
// Exit only once the text is out: a pipe takes it asynchronously.
process.stdout.write(`${JSON.stringify(body, null, 2)}\n`, () => process.exit(0));
