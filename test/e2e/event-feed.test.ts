import { afterAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/gateway/events/cursor.js';
import { sendTestEvent } from '../../src/shared/webhooks/endpoint-deliveries.js';
import { createEndpoint, findEndpoint } from '../../src/shared/webhooks/endpoints.js';
import { pruneEvents } from '../../src/shared/webhooks/feed.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { createApiClient } from '../support/api-client.js';
import { recordTestEvent, readFeedToEnd } from '../support/events.js';
import { tenantCreate } from '../../src/admin/commands/tenant.js';
import { admin, bearer, createClientWithKey } from '../support/fixtures.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// GET /api/v1/events against the real gateway and inbound worker: the webhook envelopes, per
// client, in order, with a cursor; long-polls; retention.

const suite = useGatewaySuite({
  env: () => ({ EVENT_FEED_WAITERS_PER_CLIENT: '2', EVENT_RETENTION_HOURS: '1', EVENT_FEED_MAX_WAIT_SECONDS: '300' }),
  workers: [inboundWorker, inboundExpressWorker],
});

const key = () => suite.demo.clients.all!.apiKey;
const owner = () => ({ tenantId: suite.demo.tenantId, clientId: suite.demo.clients.all!.clientId });
const feed = (query: string, apiKey = key()) => suite.api.get(`/api/v1/events?${query}`, { headers: bearer(apiKey) });
const extra: TestGateway[] = [];
afterAll(async () => {
  await Promise.all(extra.map((g) => g.stop()));
});

describe('the event feed', () => {
  it('carries the webhook envelope of a worker event, with no endpoint registered', async () => {
    const { rows } = await suite.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints');
    expect(rows[0].n).toBe(0);
    const res = await suite.api.post('/api/v1/inbound/targets', {
      body: { sourceSystem: 'crm', ...makeTargets(1, 'feed')[0] },
      headers: bearer(key()),
    });
    const importJobId = res.body.importJobId;
    const event = await eventually(async () => {
      const { events } = await readFeedToEnd(suite.api, key());
      return events.find((e) => e.data.importJobId === importJobId);
    });
    expect(event).toMatchObject({ type: 'import_job.completed', clientId: owner().clientId, version: 1 });
    const stored = await suite.pool.query('SELECT body FROM webhook_events WHERE id = $1', [event.id]);
    expect(event).toEqual(JSON.parse(stored.rows[0].body)); // the very envelope a webhook carries
  });

  it('pages in feed order with an opaque cursor; two readers with one cursor get the same events', async () => {
    const { cursor: start } = await readFeedToEnd(suite.api, key());
    const ids: string[] = [];
    for (let n = 0; n < 7; n++) ids.push((await recordTestEvent(suite.pool, owner(), n)).eventId);
    const paged: string[] = [];
    let after = start;
    for (;;) {
      const page = await feed(`after=${after}&limit=3`);
      expect(page.status).toBe(200);
      paged.push(...page.body.events.map((e: { id: string }) => e.id));
      after = page.body.next;
      if (!page.body.hasMore) break;
    }
    expect(paged).toEqual(ids);
    const [a, b] = await Promise.all([feed(`after=${start}&limit=5`), feed(`after=${start}&limit=5`)]);
    expect(a.body).toEqual(b.body);
    const { rows } = await suite.pool.query(
      'SELECT id FROM webhook_events WHERE client_id = $1 AND id = ANY($2) ORDER BY feed_seq',
      [owner().clientId, ids],
    );
    expect(rows.map((r) => r.id)).toEqual(paged);
  });

  it("filters by type, never shows another client's events or test events, and needs events.read", async () => {
    const { cursor } = await readFeedToEnd(suite.api, key());
    const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'events.read');
    const foreign = await recordTestEvent(suite.pool, { tenantId: suite.demo.tenantId, clientId: other.clientId }, 1);
    const endpoint = await createEndpoint(suite.pool, {
      ...owner(),
      url: 'https://example.com/h',
      eventTypes: '*',
    });
    await sendTestEvent(suite.pool, (await findEndpoint(suite.pool, { endpointId: endpoint.endpointId }))!);
    const mine = await recordTestEvent(suite.pool, owner(), 2);
    const page = await feed(`after=${cursor}`);
    expect(page.body.events.map((e: { id: string }) => e.id)).toEqual([mine.eventId]);
    // Positions are each client's own: the other client has one event, so this cursor is past its end.
    expect((await feed(`after=${page.body.next}`, other.apiKey)).status).toBe(400);
    const theirs = await feed('after=c2.0', other.apiKey);
    expect(theirs.body).toMatchObject({ events: [{ id: foreign.eventId }], next: 'c2.1' });
    expect((await readFeedToEnd(suite.api, other.apiKey)).events.map((e) => e.id)).toEqual([foreign.eventId]);
    const filtered = await feed(`after=${cursor}&types=import_job.completed,import_job.failed`);
    expect(filtered.body.events).toEqual([]);
    expect(filtered.body.next).toBe(page.body.next); // the cursor moves past the other types
    const denied = await feed('', suite.demo.clients['import_jobs.read']!.apiKey);
    expect(denied.status).toBe(403);
  });

  it('refuses malformed cursors, cursors past the end and unknown types with 400', async () => {
    for (const query of [
      'after=123',
      'after=c2.zzzzzzzzzzzzz',
      'after=c3.1',
      'after=c1.1', // the cross-client positions of before issue 39: not a cursor this API returns
      'after=c2.zzzzzzzzzzzz',
      'types=nope',
      'limit=0',
      'limit=1001',
      'wait=301',
    ]) {
      const res = await feed(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });

  it('wait answers as soon as an event is committed; without one, empty when the time is up', async () => {
    const { cursor } = await readFeedToEnd(suite.api, key());
    const waiting = feed(`after=${cursor}&wait=120`);
    await eventually(async () => {
      const { rows } = await suite.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
      );
      return rows[0].n > 0 ? true : undefined;
    });
    const { eventId } = await recordTestEvent(suite.pool, owner(), 1);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.events.map((e: { id: string }) => e.id)).toEqual([eventId]);
    const empty = await feed(`after=${res.body.next}&wait=1`);
    expect(empty.body).toEqual({ events: [], next: res.body.next, hasMore: false });
  });

  it("bounds a client's waiting long-polls (429), without touching other clients", async () => {
    const { cursor } = await readFeedToEnd(suite.api, key());
    const waits = [feed(`after=${cursor}&wait=120`), feed(`after=${cursor}&wait=120`)];
    const third = await eventually(async () => {
      const res = await feed(`after=${cursor}&wait=1`); // admitted while the two are not in yet: back in a second
      return res.status === 429 ? res : undefined;
    });
    expect(third.body.error.code).toBe('too_many_waiting');
    expect(third.headers.get('retry-after')).toBe('1');
    const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'events.read');
    expect((await feed('', other.apiKey)).status).toBe(200);
    const { eventId } = await recordTestEvent(suite.pool, owner(), 1);
    for (const res of await Promise.all(waits))
      expect(res.body.events.map((e: { id: string }) => e.id)).toEqual([eventId]);
  });

  it('a gateway shutting down ends its long-polls', async () => {
    const since = (await suite.pool.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;
    const gateway = await startTestGateway(suite.config);
    const api = await createApiClient(gateway.url);
    const { cursor } = await readFeedToEnd(api, key());
    const waiting = api.get(`/api/v1/events?after=${cursor}&wait=300`, { headers: bearer(key()) });
    await eventually(async () => {
      // This gateway's LISTEN connection, opened by the waiter's entry. Not by its last statement:
      // the connection's writability check replaces `LISTEN` in pg_stat_activity every few seconds.
      const { rows } = await suite.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'connect-gateway-events' AND backend_start >= $1`,
        [since],
      );
      return rows[0].n >= 1 ? true : undefined;
    });
    await gateway.stop();
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.events).toEqual([]);
  });

  it('prunes events past the retention; an older cursor is 410 with the oldest one kept', async () => {
    const { cursor: before } = await readFeedToEnd(suite.api, key());
    const old = await recordTestEvent(suite.pool, owner(), 1);
    const { cursor: middle } = await readFeedToEnd(suite.api, key());
    const kept = await recordTestEvent(suite.pool, owner(), 2);
    await readFeedToEnd(suite.api, key()); // both have positions now
    await suite.pool.query(
      `UPDATE webhook_events SET created_at = now() - interval '2 hours' WHERE feed_seq <= (
      SELECT feed_seq FROM webhook_events WHERE id = $1)`,
      [old.eventId],
    );
    expect(await pruneEvents(suite.pool, suite.config.events.retentionMs)).toBeGreaterThan(0);
    const gone = await feed(`after=${before}`);
    expect(gone.status).toBe(410);
    expect(gone.body.error).toMatchObject({ code: 'cursor_expired', details: { oldestCursor: middle } });
    const resumed = await feed(`after=${gone.body.error.details.oldestCursor}`);
    expect(resumed.body.events.map((e: { id: string }) => e.id)).toEqual([kept.eventId]);
    const fromStart = await readFeedToEnd(suite.api, key());
    expect(fromStart.events.map((e) => e.id)).toEqual([kept.eventId]);
    expect(encodeCursor(0n)).toBe('c2.0');
  });
});

/** A new tenant with one client that reads the feed. */
async function newTenantClient() {
  const { tenantId } = await admin(suite.pool, tenantCreate, ['--name', 'feed tenant']);
  return { tenantId: tenantId as string, ...(await createClientWithKey(suite.pool, tenantId, 'events.read')) };
}
type Reader = Awaited<ReturnType<typeof newTenantClient>>;

/** Another tenant writes two events, numbered in the feed before the caller goes on. */
const othersWrite = (other: Reader) => async () => {
  for (let n = 0; n < 2; n++) await recordTestEvent(suite.pool, other, n);
  await readFeedToEnd(suite.api, other.apiKey);
};

/** The cursor `by` positions further on: past the end when it is the end. */
function cursorPast(cursor: string, by: bigint): string {
  const [prefix, digits] = cursor.split('.') as [string, string];
  const position = [...digits].reduce((n, ch) => n * 36n + BigInt(parseInt(ch, 36)), 0n);
  return `${prefix}.${(position + by).toString(36)}`;
}

describe("another tenant's events (issue 39: a client's cursor must not count them)", () => {
  /** Every `next` a reader gets through three own events: empty feed, full pages, the end, a long-poll that times out. */
  async function cursorsOf(reader: Reader, between: () => Promise<void>) {
    const read = (query: string) => feed(query, reader.apiKey);
    const nexts: string[] = [];
    const first = await read('');
    nexts.push(first.body.next);
    for (let n = 0; n < 3; n++) {
      await between();
      await recordTestEvent(suite.pool, reader, n);
    }
    await between();
    let after = first.body.next;
    const ids: string[] = [];
    for (;;) {
      const page = await read(`after=${after}&limit=1`);
      ids.push(...page.body.events.map((e: { id: string }) => e.id));
      nexts.push(page.body.next);
      after = page.body.next;
      if (!page.body.hasMore) break;
    }
    expect(ids).toHaveLength(3);
    await between();
    const empty = await read(`after=${after}`);
    expect(empty.body).toEqual({ events: [], next: after, hasMore: false });
    const waiting = read(`after=${after}&wait=1`);
    await between(); // while it waits
    const timedOut = await waiting;
    expect(timedOut.body).toEqual({ events: [], next: after, hasMore: false });
    return nexts;
  }

  it('full pages, empty pages and timed-out long-polls give the cursors they would if nobody else wrote', async () => {
    const [writer, reader, control] = [await newTenantClient(), await newTenantClient(), await newTenantClient()];
    const whileOthersWrite = await cursorsOf(reader, othersWrite(writer));
    const alone = await cursorsOf(control, async () => undefined);
    expect(whileOthersWrite).toEqual(alone);
  });

  it('a cursor past the end is refused the same whatever another tenant writes', async () => {
    const [writer, reader] = [await newTenantClient(), await newTenantClient()];
    await recordTestEvent(suite.pool, reader, 1);
    const { cursor } = await readFeedToEnd(suite.api, reader.apiKey);
    const past = [cursorPast(cursor, 1n), cursorPast(cursor, 2n)];
    const answers = () =>
      Promise.all(
        past.map(async (p) => {
          const { status, body } = await feed(`after=${p}`, reader.apiKey);
          const { correlationId: _perRequest, ...error } = body.error ?? {};
          return { status, body: { ...body, error } };
        }),
      );
    const before = await answers();
    expect(before[0]!.status).toBe(400);
    await othersWrite(writer)();
    expect(await answers()).toEqual(before);
    await othersWrite(writer)();
    expect(await answers()).toEqual(before);
  });

  it("cursor_expired and its oldestCursor come from the client's own events, not another tenant's", async () => {
    const [writer, reader] = [await newTenantClient(), await newTenantClient()];
    const { cursor: beforeOwn } = await readFeedToEnd(suite.api, reader.apiKey);
    await recordTestEvent(suite.pool, reader, 1);
    const { cursor: afterOwn } = await readFeedToEnd(suite.api, reader.apiKey, beforeOwn);
    await othersWrite(writer)(); // numbered after the reader's event, and aged with it below
    const last = await recordTestEvent(suite.pool, writer, 9);
    await readFeedToEnd(suite.api, writer.apiKey);
    const kept = await recordTestEvent(suite.pool, reader, 2);
    await readFeedToEnd(suite.api, reader.apiKey, afterOwn); // numbered
    await suite.pool.query(
      `UPDATE webhook_events SET created_at = now() - interval '2 hours'
        WHERE feed_seq <= (SELECT feed_seq FROM webhook_events WHERE id = $1)`,
      [last.eventId],
    );
    expect(await pruneEvents(suite.pool, suite.config.events.retentionMs)).toBeGreaterThan(0);
    const gone = await feed(`after=${beforeOwn}`, reader.apiKey);
    expect(gone.status).toBe(410);
    expect(gone.body.error).toMatchObject({ code: 'cursor_expired', details: { oldestCursor: afterOwn } });
    const readOn = await feed(`after=${afterOwn}`, reader.apiKey); // nothing of the reader's was lost after it
    expect(readOn.status).toBe(200);
    expect(readOn.body.events.map((e: { id: string }) => e.id)).toEqual([kept.eventId]);
  });
});
