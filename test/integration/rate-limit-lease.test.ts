import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRateLimiter } from '../../src/gateway/rate-limit/rate-limiter.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// Rate limits leased in blocks (rate-limiter.ts) against the real table in PostgreSQL: two
// limiters stand for two gateway replicas, each with its own pool, sharing only the database.
let db: TestDatabase;
let pools: Pool[];

beforeAll(async () => {
  db = await createTestDatabase();
  pools = [createPool(db.url, 2, 'replica-a'), createPool(db.url, 2, 'replica-b')];
});

afterAll(async () => {
  await Promise.all(pools?.map((p) => p.end()) ?? []);
  await db?.drop();
});

describe('rate limits leased in blocks', () => {
  it('admits exactly the limit across two replicas, with a store round trip per block, not per request', async () => {
    const queries = pools.map((p) => vi.spyOn(p, 'query'));
    const replicas = pools.map((p) => createRateLimiter(p, 50));
    const client = randomUUID();
    const limit = 400; // a lease of 20 points
    const decisions = [];
    // Interleaved, and in bursts of concurrent requests, as a load balancer would spread them.
    for (let round = 0; round < 30; round++) {
      decisions.push(...(await Promise.all(Array.from({ length: 16 }, (_, i) => replicas[i % 2]!(client, limit)))));
    }
    const admitted = decisions.filter((d) => d.allowed).length;
    const storeCalls = queries.reduce((n, q) => n + q.mock.calls.length, 0);

    expect(decisions.length).toBe(480);
    expect(admitted).toBe(limit);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfterSeconds >= 1)).toBe(true);
    // 400 / 20 = 20 leases, plus the refusals that find the window spent (one per replica).
    expect(storeCalls).toBeGreaterThanOrEqual(20);
    expect(storeCalls).toBeLessThanOrEqual(26);
  });

  it('keeps the old exactness for small limits: one point per lease', async () => {
    const replicas = pools.map((p) => createRateLimiter(p, 50));
    const client = randomUUID();
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await replicas[i % 2]!(client, 4)).allowed);
    expect(statuses).toEqual([true, true, true, true, false, false]);
  });

  it('announces what is left of the window, counting the points this replica holds', async () => {
    const limiter = createRateLimiter(pools[0]!, 50);
    const client = randomUUID();
    const first = await limiter(client, 600);
    const second = await limiter(client, 600);
    expect(first.headers.RateLimit).toMatch(/^"client";r=599;t=\d+$/);
    expect(second.headers.RateLimit).toMatch(/^"client";r=598;t=\d+$/);
  });
});
