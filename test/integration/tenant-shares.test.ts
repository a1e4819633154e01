import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createTenantPool, type TenantPool } from '../../src/shared/db/tenant-scope.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';

// Issue 49: a tenant holds at most its share of a scoped pool against the real PostgreSQL. Tenant
// A's statements wait on an advisory lock the test holds, so they keep their connections as long
// as the test says (no durations); tenant B's statement runs meanwhile.

let db: TestDatabase;
let owner: Pool;
let scoped: TenantPool;
const lockKey = 4_904_901;
const applicationName = 'test-tenant-shares';

beforeAll(async () => {
  db = await createTestDatabase();
  owner = createPool(db.url, 2, 'test-owner', { connectionTimeoutMs: scaled(30_000) });
  scoped = createTenantPool(db.url, 4, applicationName, {
    connectionTimeoutMs: scaled(30_000),
    shares: { sharePercent: 50, queuePerTenant: 2, waitMs: scaled(60_000) },
  });
});

afterAll(async () => {
  await scoped?.end();
  await owner?.end();
  await db?.drop();
});

/** Backends of the scoped pool waiting on the test's advisory lock. */
const waitingOnLock = async () =>
  Number(
    (
      await owner.query(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [applicationName],
      )
    ).rows[0].n,
  );

describe("a tenant's share of a scoped pool", () => {
  it("keeps one tenant to its share and queue while another tenant's statements run", async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const holder = await owner.connect();
    await holder.query('SELECT pg_advisory_lock($1)', [lockKey]);
    const blocked = Array.from({ length: 4 }, () =>
      scoped.run(a, (tx) => tx.query('SELECT pg_advisory_lock_shared($1), pg_advisory_unlock_shared($1)', [lockKey])),
    );
    try {
      // Two of A's statements hold its share (2 of 4) and wait on the lock; two more wait in its queue.
      await eventually(async () => ((await waitingOnLock()) === 2 ? true : undefined));
      expect(scoped.shares()).toMatchObject({ held: 2, waiting: 2, tenantsAtShare: 1 });
      const refused = await scoped.run(a, (tx) => tx.query('SELECT 1')).catch((err: unknown) => err);
      expect(refused).toMatchObject({ code: 'database_share_exceeded', details: { reason: 'queue_full' } });
      // B gets a connection and its answer while A's are all still held and queued.
      const answer = await scoped.run(
        b,
        async (tx) => (await tx.query(`SELECT current_setting('connect.tenant_id') AS t`)).rows[0].t,
      );
      expect(answer).toBe(b);
      expect(await waitingOnLock()).toBe(2);
      expect(scoped.shares()).toMatchObject({ held: 2, waiting: 2 });
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [lockKey]);
      holder.release();
    }
    // Released, A's queued statements run in their turn: all four answered.
    expect(await Promise.all(blocked)).toHaveLength(4);
    expect(scoped.shares()).toMatchObject({ held: 0, waiting: 0 });
    expect(scoped.shares()!.outcomes).toMatchObject({ queued: 2, queue_full: 1 });
  });

  it('cancels a statement past its statement timeout (57014) and gives the connection back', async () => {
    const timed = createTenantPool(db.url, 1, `${applicationName}-timeout`, {
      connectionTimeoutMs: scaled(30_000),
      statementTimeoutMs: 200,
      shares: { sharePercent: 100, queuePerTenant: 2, waitMs: scaled(60_000) },
    });
    const holder = await owner.connect();
    await holder.query('SELECT pg_advisory_lock($1)', [lockKey]);
    try {
      const tenant = randomUUID();
      const cancelled = await timed
        .run(tenant, (tx) => tx.query('SELECT pg_advisory_lock_shared($1)', [lockKey]))
        .catch((err: unknown) => err);
      expect(cancelled).toMatchObject({ code: '57014' });
      // The one connection is free again for the next statement.
      expect((await timed.run(tenant, (tx) => tx.query('SELECT 1 AS one'))).rows).toEqual([{ one: 1 }]);
      expect(timed.shares()).toMatchObject({ held: 0 });
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [lockKey]);
      holder.release();
      await timed.end();
    }
  });
});
