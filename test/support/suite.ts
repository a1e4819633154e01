import { afterAll, beforeAll } from 'vitest';
import type { RouteDefinition } from '../../src/gateway/routes/route-definition.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { createDemo, type Demo } from './fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from './gateway.js';
import { startTestWorkers } from './workers.js';
import { scaled } from './time-scale.js';
import type { Config } from '../../src/shared/config.js';
import type { RunningWorkers } from '../../src/workers/start-workers.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';

export type GatewaySuite = {
  db: TestDatabase;
  pool: Pool;
  config: Config;
  gateway: TestGateway;
  api: ApiClient;
  demo: Demo;
  workers?: RunningWorkers;
};

/**
 * The usual e2e file: its own database, a gateway over real HTTP, an OpenAPI-checking client,
 * one demo tenant and, when asked, real workers on the same topics; all torn down after the file. Fields are filled in beforeAll.
 */
export function useGatewaySuite(
  options: { env?: () => Record<string, string>; extraRoutes?: RouteDefinition[]; workers?: WorkerKind[] } = {},
): GatewaySuite {
  const suite = {} as GatewaySuite;
  beforeAll(async () => {
    suite.db = await createTestDatabase();
    // A loaded machine may keep the test's own queries waiting for a connection a while.
    suite.pool = createPool(suite.db.url, 4, 'test', { connectionTimeoutMs: scaled(30_000) });
    // Dropping the database at the end ends idle connections that pool.end() has not closed yet.
    suite.pool.on('error', () => undefined);
    suite.config = testConfig(suite.db.url, options.env?.() ?? {});
    suite.gateway = await startTestGateway(suite.config, options.extraRoutes);
    if (options.workers) suite.workers = await startTestWorkers(suite.config, options.workers);
    suite.api = await createApiClient(suite.gateway.url);
    suite.demo = await createDemo(suite.pool);
  });
  afterAll(async () => {
    await suite.workers?.stop();
    await suite.gateway?.stop();
    await suite.pool?.end();
    await suite.db?.drop();
  });
  return suite;
}
