import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFeedPage } from '../../src/gateway/events/store.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createTenantPool, type TenantPool } from '../../src/shared/db/tenant-scope.js';
import { sequenceEvents } from '../../src/shared/webhooks/feed.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { recordTestEvent, recordTestEventIn } from '../support/events.js';
import { createDemo } from '../support/fixtures.js';

// The feed's order against real PostgreSQL: a position is never given to an event that commits
// later than one already readable, whatever the order the events were inserted in.

let db: TestDatabase;
let pool: Pool;
let scoped: TenantPool;
let owner: { tenantId: string; clientId: string };
let other: { tenantId: string; clientId: string };

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 20, 'test-feed-order');
  scoped = createTenantPool(db.url, 2, 'test-feed-order-scoped');
  const demo = await createDemo(pool);
  owner = { tenantId: demo.tenantId, clientId: demo.clients.all!.clientId };
  const otherDemo = await createDemo(pool);
  other = { tenantId: otherDemo.tenantId, clientId: otherDemo.clients.all!.clientId };
});
afterAll(async () => {
  await Promise.all([pool?.end(), scoped?.end()]);
  await db?.drop();
});

/** What a reader sees after `after`, as the gateway reads it (sequence unscoped, then read in the tenant's scope). */
async function read(after: bigint | null, reader = owner) {
  await sequenceEvents(pool);
  const page = await scoped.run(reader.tenantId, (tx) =>
    readFeedPage(tx, reader.clientId, { after, types: null, limit: 1000 }),
  );
  const ids = page.events.map((e) => (JSON.parse(e.body) as { id: string }).id);
  const next = page.events.length === 1000 ? page.events.at(-1)!.seq : page.lastSeq;
  return { ids, next };
}

describe('event feed order', () => {
  it('an event inserted first but committed last is not skipped by a reader already past later ones', async () => {
    const slow = await pool.connect();
    try {
      await slow.query('BEGIN');
      const early = await recordTestEventIn(slow, owner, 1); // inserted first, still uncommitted
      const late = await recordTestEvent(pool, owner, 2); // inserted and committed after it
      const first = await read(null);
      expect(first.ids).toEqual([late.eventId]);
      await slow.query('COMMIT');
      const second = await read(first.next);
      expect(second.ids).toEqual([early.eventId]);
      // Another reader from the start sees both, in commit order, each once.
      expect((await read(null)).ids).toEqual([late.eventId, early.eventId]);
    } finally {
      slow.release();
    }
  });

  it('with writers and sequencers racing, readers following the cursor see every committed event exactly once', async () => {
    const start = (await read(null)).next;
    const written: string[] = [];
    let writing = true;
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; i < 40; i++) {
        // Some transactions stay open a while, so commits overtake inserts.
        const tx = await pool.connect();
        try {
          await tx.query('BEGIN');
          const { eventId } = await recordTestEventIn(tx, owner, w * 1000 + i);
          if (i % 3 === 0) await new Promise((r) => setTimeout(r, 5 + ((w * 7 + i) % 20)));
          if (i % 11 === 5) {
            await tx.query('ROLLBACK'); // never committed: never in the feed
          } else {
            await tx.query('COMMIT');
            written.push(eventId);
          }
        } finally {
          tx.release();
        }
      }
    });
    const readers = Array.from({ length: 3 }, async () => {
      const seen: string[] = [];
      let cursor = start;
      for (;;) {
        const done = !writing;
        const page = await read(cursor);
        seen.push(...page.ids);
        cursor = page.next;
        if (done && page.ids.length === 0) return seen;
      }
    });
    await Promise.all(writers);
    writing = false;
    const seen = await Promise.all(readers);
    const table = await pool.query<{ id: string }>(
      'SELECT id FROM webhook_events WHERE client_id = $1 AND client_seq > $2 ORDER BY client_seq',
      [owner.clientId, start.toString()],
    );
    expect(new Set(written)).toEqual(new Set(table.rows.map((r) => r.id)));
    for (const s of seen) expect(s).toEqual(table.rows.map((r) => r.id)); // all of them, once, in order
  });

  it("each client's positions are its own, 1, 2, 3 … in commit order, whatever other tenants commit between", async () => {
    const positions = (client: { clientId: string }) =>
      pool
        .query<{ client_seq: string; feed_seq: string }>(
          'SELECT client_seq, feed_seq FROM webhook_events WHERE client_id = $1 ORDER BY feed_seq',
          [client.clientId],
        )
        .then((r) => r.rows.map((row) => ({ client: BigInt(row.client_seq), feed: BigInt(row.feed_seq) })));
    const before = { owner: (await read(null)).next, other: (await read(null, other)).next };
    const writers = [owner, other].map(async (client, w) => {
      for (let i = 0; i < 30; i++) {
        const tx = await pool.connect();
        try {
          await tx.query('BEGIN');
          await recordTestEventIn(tx, client, w * 1000 + i);
          if (i % 4 === w) await new Promise((r) => setTimeout(r, 3 + (i % 7)));
          await tx.query('COMMIT');
        } finally {
          tx.release();
        }
        if (i % 5 === 0) await read(null, client); // numbering while the other tenant writes
      }
    });
    await Promise.all(writers);
    for (const [client, start] of [
      [owner, before.owner],
      [other, before.other],
    ] as const) {
      expect((await read(start, client)).next).toBe(start + 30n); // the other's 30 never moved it
      const all = (await positions(client)).filter((p) => p.client > start);
      // Dense after the reader's last position, in the feed's (commit) order.
      expect(all.map((p) => p.client)).toEqual(all.map((_, i) => start + BigInt(i + 1)));
    }
  });
});
