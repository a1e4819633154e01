import type { TenantTx } from '../../shared/db/tenant-scope.js';
import { testEventType } from '../../shared/webhooks/endpoint-deliveries.js';

// One page of a client's events, with the client's own head, read in one statement (one
// snapshot). Positions are the client's (client_seq: its n-th event is n), given in order by the
// sequencing transactions, which commit one after another: every position up to last_seq is
// visible in the snapshot (or pruned), so a page shorter than the limit has examined all of them.
// Nothing here depends on other clients' events. The head (h) is MATERIALIZED so that the page's
// bounds are values when the events are read (an index range of the page's events): inlined, they
// were a filter over every retained event of the client (10,000 table pages, 89 ms warm and 2 s
// cold for a long-poll five events behind, bench:growth; test/integration/list-plans.test.ts).

export type FeedPage = {
  /** The client's last position given (its newest event, pruned or not; 0: none yet). */
  lastSeq: bigint;
  /** The client's positions up to here are pruned: pruning takes a prefix of the feed, so the
   *  client's kept events are its newest ones, and this is just before the oldest kept. */
  prunedThrough: bigint;
  events: { seq: bigint; body: string }[];
};

export async function readFeedPage(
  db: TenantTx,
  clientId: string,
  page: { after: bigint | null; types: readonly string[] | null; limit: number },
): Promise<FeedPage> {
  const { rows } = await db.query(
    `WITH h AS MATERIALIZED (
       SELECT c.last_seq, coalesce(k.oldest - 1, c.last_seq) AS pruned_through
         FROM (SELECT coalesce((SELECT last_seq FROM event_feed_clients WHERE client_id = $1), 0) AS last_seq) c,
              (SELECT min(client_seq) AS oldest FROM webhook_events WHERE client_id = $1 AND client_seq IS NOT NULL) k
     )
     SELECT h.last_seq, h.pruned_through, e.client_seq, e.body
       FROM h
       LEFT JOIN LATERAL (
         SELECT client_seq, body FROM webhook_events
          WHERE client_id = $1 AND client_seq > greatest($2::bigint, h.pruned_through) AND client_seq <= h.last_seq
            AND type <> $5 AND ($3::text[] IS NULL OR type = ANY($3))
          ORDER BY client_seq LIMIT $4
       ) e ON true
      ORDER BY e.client_seq`,
    [clientId, page.after?.toString() ?? null, page.types, page.limit, testEventType],
  );
  const head = rows[0];
  return {
    lastSeq: BigInt(head.last_seq),
    prunedThrough: BigInt(head.pruned_through),
    events: rows
      .filter((r) => r.client_seq !== null)
      .map((r) => ({ seq: BigInt(r.client_seq), body: r.body as string })),
  };
}
