import { afterAll, beforeAll } from 'vitest';
import type { RouteDefinition } from '../../src/gateway/routes/route-definition.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { createDemo, type Demo } from './fixtures.js';
import { startTestGateway, type TestGateway } from './gateway.js';

export type GatewaySuite = { db: TestDatabase; pool: Pool; gateway: TestGateway; api: ApiClient; demo: Demo };

/**
 * The usual e2e file: its own database, a gateway over real HTTP, an OpenAPI-checking client
 * and one demo tenant; all torn down after the file. Fields are filled in beforeAll.
 */
export function useGatewaySuite(
  options: { env?: () => Record<string, string>; extraRoutes?: RouteDefinition[] } = {},
): GatewaySuite {
  const suite = {} as GatewaySuite;
  beforeAll(async () => {
    suite.db = await createTestDatabase();
    suite.pool = createPool(suite.db.url, 4, 'test');
    suite.gateway = await startTestGateway(suite.db.url, options.env?.() ?? {}, options.extraRoutes);
    suite.api = await createApiClient(suite.gateway.url);
    suite.demo = await createDemo(suite.pool);
  });
  afterAll(async () => {
    await suite.gateway?.stop();
    await suite.pool?.end();
    await suite.db?.drop();
  });
  return suite;
}
