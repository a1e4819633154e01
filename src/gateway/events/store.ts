import type { TenantTx } from '../../shared/db/tenant-scope.js';
import { testEventType } from '../../shared/webhooks/endpoint-deliveries.js';

// One page of a client's events and the feed's head, read in one statement (one snapshot): every
// position up to last_seq is committed and visible in it, so a page shorter than the limit has
// examined everything up to last_seq.

export type FeedPage = {
  lastSeq: bigint;
  prunedThrough: bigint;
  events: { seq: bigint; body: string }[];
};

export async function readFeedPage(
  db: TenantTx,
  clientId: string,
  page: { after: bigint | null; types: readonly string[] | null; limit: number },
): Promise<FeedPage> {
  const { rows } = await db.query(
    `SELECT h.last_seq, h.pruned_through, e.feed_seq, e.body
       FROM event_feed_head h
       LEFT JOIN LATERAL (
         SELECT feed_seq, body FROM webhook_events
          WHERE client_id = $1 AND feed_seq > greatest($2::bigint, h.pruned_through) AND feed_seq <= h.last_seq
            AND type <> $5 AND ($3::text[] IS NULL OR type = ANY($3))
          ORDER BY feed_seq LIMIT $4
       ) e ON true
      ORDER BY e.feed_seq`,
    [clientId, page.after?.toString() ?? null, page.types, page.limit, testEventType],
  );
  const head = rows[0];
  return {
    lastSeq: BigInt(head.last_seq),
    prunedThrough: BigInt(head.pruned_through),
    events: rows.filter((r) => r.feed_seq !== null).map((r) => ({ seq: BigInt(r.feed_seq), body: r.body as string })),
  };
}
