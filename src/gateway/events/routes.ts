import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import { AppError } from '../../shared/errors.js';
import { sequenceEvents } from '../../shared/webhooks/feed.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { EventWaits } from './notifications.js';
import { eventPageSchema, listEventsQuery } from './schemas.js';
import { singleFlightAfter } from './sequencer.js';
import { readFeedPage, type FeedPage } from './store.js';

// Decimals when EVENT_RETENTION_HOURS has them (a soak's minutes): 0.1, not 0.
const retentionHours = (events: Config['events']) => Number((events.retentionMs / 3_600_000).toFixed(2));

/** pool: unscoped, for the feed's sequencing (across tenants); tenantPool: the caller's page. */
export const eventRoutes = (
  pool: Pool,
  tenantPool: TenantPool,
  events: Config['events'],
  waits: EventWaits,
): RouteDefinition[] => {
  const sequence = singleFlightAfter(() => sequenceEvents(pool));
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/events',
      operationId: 'listEvents',
      summary: "The caller's events, after a cursor (pull instead of webhooks)",
      description:
        'The same envelopes the webhooks carry, for the calling Integration Client, whether or not it registered ' +
        'endpoints, in the order they were committed; each event once, at a position that never changes. Pass each ' +
        "page's `next` as `after`. Two readers with the same cursor get the same events. A cursor is a position among " +
        "the caller's own events (its n-th event is n): it moves with them only, never with other clients' events. " +
        'With `wait`, an empty answer waits (long-poll) until an event is committed or the time is up. ' +
        `Events are kept ${retentionHours(events)} hours (EVENT_RETENTION_HOURS); a cursor before the caller's oldest ` +
        'event kept is 410 cursor_expired. See docs/api-guide.md, "Event feed".',
      tag: 'Events',
      auth: 'apiKey',
      query: listEventsQuery(events.feedMaxWaitSeconds),
      errorStatuses: [410],
      errorDescriptions: {
        400:
          "Invalid query (validation_failed), or a cursor past the end of the caller's feed (beyond its newest event, " +
          'counting every type: not one this API returned).',
        429:
          'Rate limit exceeded (rate_limited), or too many long-polls of the client or its tenant waiting on this gateway ' +
          '(too_many_waiting); see Retry-After.',
      },
      responses: {
        200: { description: 'A page of events (possibly empty) and the cursor after it', schema: eventPageSchema },
      },
      async handler({ query, client, signal }) {
        const after = query.after === undefined ? null : decodeCursor(query.after);
        const read = async () => {
          await sequence();
          return tenantPool.run(client.tenantId, (tx) =>
            readFeedPage(tx, client.clientId, { after, types: query.types ?? null, limit: query.limit }),
          );
        };
        // Every decision below compares the cursor with the client's own positions only.
        const answer = (page: FeedPage) => {
          if (after !== null && after < page.prunedThrough) {
            throw new AppError(
              'cursor_expired',
              `The cursor points before the oldest event kept (events are kept ${retentionHours(events)} hours); read again without after.`,
              null,
              { oldestCursor: encodeCursor(page.prunedThrough) },
            );
          }
          // Every cursor this API gave the client is at most its newest position then, and so now.
          if (after !== null && after > page.lastSeq) {
            throw new AppError('validation_failed', 'The request query is invalid.', {
              after: ['is past the end of the feed: not a cursor this API returned'],
            });
          }
          const full = page.events.length === query.limit;
          const next = full ? page.events.at(-1)!.seq : page.lastSeq;
          return {
            status: 200,
            body: {
              events: page.events.map((e) => JSON.parse(e.body) as unknown),
              next: encodeCursor(next),
              hasMore: full,
            },
          };
        };
        if (query.wait === 0) return answer(await read());
        const waiter = waits.enter(client);
        if (!waiter) {
          throw new AppError(
            'too_many_waiting',
            'Too many long-polls of this client or its tenant are waiting; retry later, or without wait.',
            null,
            null,
            1,
          );
        }
        try {
          const deadline = Date.now() + query.wait * 1000;
          for (;;) {
            const page = await read();
            const remaining = deadline - Date.now();
            if (page.events.length > 0 || remaining <= 0) return answer(page);
            answer(page); // a stale or bad cursor is refused now, not after the wait
            const outcome = await waiter.next(remaining, signal);
            if (outcome !== 'woken') return answer(outcome === 'timeout' ? await read() : page);
          }
        } finally {
          waiter.leave();
        }
      },
    }),
  ];
};
