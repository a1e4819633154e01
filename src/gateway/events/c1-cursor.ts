import type { TenantTx } from '../../shared/db/tenant-scope.js';

// Cursors of the earlier release ("c1." + a feed_seq, a position across all clients), read as the
// client's own position: that of its last event at or before them. Only up to the feed's head when
// positions became per client (event_feed_head.c1_end, migrations/0022): a larger one is read as
// that head (it re-reads, never skips), so no answer places an event numbered since. Whether one
// is expired depends on the client's own events, and on what was pruned before that migration.

/** The client position a c1 cursor stands for, or 'expired' when events after it may be gone. */
export async function positionOfC1Cursor(db: TenantTx, clientId: string, feedSeq: bigint): Promise<bigint | 'expired'> {
  const { rows } = await db.query(
    `SELECT least($2::bigint, h.c1_end) < h.c1_pruned_through AS expired,
            (SELECT max(client_seq) FROM webhook_events
              WHERE client_id = $1 AND client_seq IS NOT NULL AND feed_seq <= least($2::bigint, h.c1_end)) AS seq,
            coalesce((SELECT min(client_seq) - 1 FROM webhook_events WHERE client_id = $1 AND client_seq IS NOT NULL),
                     (SELECT last_seq FROM event_feed_clients WHERE client_id = $1), 0) AS pruned_through
       FROM event_feed_head h`,
    [clientId, feedSeq.toString()],
  );
  const { expired, seq, pruned_through } = rows[0];
  if (expired) return 'expired';
  // A kept event at or before the cursor: every pruned one of the client's came before it.
  if (seq !== null) return BigInt(seq);
  // None: the cursor is before all of the client's kept events. Sure only if none was pruned.
  return BigInt(pruned_through) === 0n ? 0n : 'expired';
}
