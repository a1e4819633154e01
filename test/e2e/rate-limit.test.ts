import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createApiClient, type ApiClient } from '../support/api-client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createClientWithKey, createDemo, setRateLimit, type Demo } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';

const path = '/api/v1/connect/inventory/items';
let db: TestDatabase;
let pool: Pool;
let gateways: TestGateway[];
let apis: ApiClient[];
let demo: Demo;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, 'test');
  // Two replicas sharing nothing but PostgreSQL; short auth cache so a new limit applies at once.
  gateways = [
    await startTestGateway(testConfig(db.url, { AUTH_CACHE_TTL_MS: '0' })),
    await startTestGateway(testConfig(db.url, { AUTH_CACHE_TTL_MS: '0' })),
  ];
  apis = await Promise.all(gateways.map((g) => createApiClient(g.url)));
  demo = await createDemo(pool);
});

afterAll(async () => {
  await Promise.all(gateways?.map((g) => g.stop()) ?? []);
  await pool?.end();
  await db?.drop();
});

describe('rate limiting per Integration Client', () => {
  it('announces the policy and the remaining quota on every response', async () => {
    const c = await createClientWithKey(pool, demo.tenantId, 'connect.inventory.read');
    const res = await apis[0]!.get(path, { headers: bearer(c.apiKey) });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toBe('"client";q=600;w=60');
    expect(res.headers.get('ratelimit')).toMatch(/^"client";r=599;t=\d+$/);
  });

  it('answers 429 over the limit, with Retry-After and the headers; another client is unaffected', async () => {
    const limited = await createClientWithKey(pool, demo.tenantId, 'connect.inventory.read');
    const other = await createClientWithKey(pool, demo.tenantId, 'connect.inventory.read');
    await setRateLimit(pool, limited.clientId, 3);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await apis[0]!.get(path, { headers: bearer(limited.apiKey) })).status);
    expect(statuses).toEqual([200, 200, 200]);
    const res = await apis[0]!.get(path, { headers: bearer(limited.apiKey) });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(res.headers.get('ratelimit-policy')).toBe('"client";q=3;w=60');
    expect(res.headers.get('ratelimit')).toMatch(/^"client";r=0;t=\d+$/);
    expect((await apis[0]!.get(path, { headers: bearer(other.apiKey) })).status).toBe(200);
  });

  it('is shared by two gateway replicas', async () => {
    const c = await createClientWithKey(pool, demo.tenantId, 'connect.inventory.read');
    await setRateLimit(pool, c.clientId, 4);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await apis[i % 2]!.get(path, { headers: bearer(c.apiKey) })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });
});
