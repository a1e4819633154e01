import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createUploadQuota } from '../../src/gateway/rate-limit/upload-quota.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { AppError } from '../../src/shared/errors.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// Upload quotas on the shared leased counter (leased-counter.ts), against the real table: two
// quotas stand for two gateway replicas, each with its own pool, sharing only the database.
// 1 KiB/s with bodies up to 1 MiB: one window of 1 MiB for 1024 s, leased 52,428 bytes at a time.
const KiB = 1024;
const settings = { clientBytesPerSecond: KiB, tenantBytesPerSecond: KiB, largestBodyBytes: 1024 * KiB };
const windowBytes = 1024 * KiB;
const lease = Math.floor(windowBytes / 20);

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

/** How many of `count` charges are admitted, sent in concurrent bursts of 16. */
async function admitted(charge: (i: number) => Promise<void>, count: number) {
  let taken = 0;
  for (let round = 0; round < count / 16; round++) {
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        charge(round * 16 + i).then(
          () => true,
          (err: unknown) => {
            if (!(err instanceof AppError) || err.code !== 'upload_quota_exceeded') throw err;
            return false;
          },
        ),
      ),
    );
    taken += outcomes.filter(Boolean).length;
  }
  return taken;
}

describe('upload quotas leased in blocks', () => {
  it('holds a tenant’s clients on two replicas to one window, mostly without a round trip', async () => {
    const queries = pools.map((p) => vi.spyOn(p, 'query'));
    const replicas = pools.map((p) => createUploadQuota(settings, p));
    const tenant = randomUUID();
    const clients = [randomUUID(), randomUUID()];
    const size = 4 * KiB; // a small batch
    const count = 384; // 1.5 windows' worth
    const taken = await admitted(
      (i) => replicas[i % 2]!({ client: clients[Math.floor(i / 2) % 2]!, tenant }).charge(size),
      count,
    );
    const roundTrips = queries.reduce((n, q) => n + q.mock.calls.length, 0);
    console.info(
      `upload quota: ${(roundTrips / count).toFixed(3)} database round trips per charge (${roundTrips} for ${count})`,
    );

    // Never beyond one window; short of it by at most a lease held by the other replica and
    // less than a body on the refusing one.
    expect(taken * size).toBeLessThanOrEqual(windowBytes);
    expect(taken * size).toBeGreaterThan(windowBytes - lease - size);
    // Two quotas (client, tenant) per charge, each a round trip per lease of 12 bodies or so,
    // plus refusals that find the window spent (an ask and its undoing per replica and quota).
    expect(roundTrips / count).toBeLessThan(0.25);
  });

  it('counts in memory per replica while PostgreSQL is unreachable', async () => {
    const down = createPool('postgres://postgres@127.0.0.1:1/connect', 1, 'down', { connectionTimeoutMs: 1000 });
    down.on('error', () => undefined);
    try {
      const charge = createUploadQuota(settings, down)({ client: randomUUID(), tenant: randomUUID() });
      await charge.charge(windowBytes - KiB);
      await expect(charge.charge(2 * KiB)).rejects.toMatchObject({ code: 'upload_quota_exceeded' });
      await charge.charge(KiB);
    } finally {
      await down.end();
    }
  });
});
