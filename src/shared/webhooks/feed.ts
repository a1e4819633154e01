import { inTransaction, type Pool, type Queryable } from '../db/pool.js';
import { deleteDeliveries } from './endpoints.js';

// The event feed's order (see migrations/0016, 0022): feed_seq (across clients) and client_seq
// (the client's own positions, what its cursors hold) are assigned to committed events only, by
// one writer at a time holding the row lock of event_feed_head, so positions become visible in
// order and a reader past a position never meets a smaller one later. Pruning removes a prefix of
// the feed's order, so a client's kept events are its newest ones and an older cursor is told it
// is gone, never served a gap.

/** Events numbered per sequencing transaction (a backlog is numbered in several). */
const sequenceBatch = 5000;

/**
 * Gives every committed event without a position one, in the order recorded (created_at, id), and
 * its client's next own position. The lock is taken before the statement that picks the events
 * starts, so that statement sees every event committed before the caller asked (a caller woken by
 * an event's NOTIFY finds it). Returns how many events got their client's position.
 */
export async function sequenceEvents(pool: Pool): Promise<number> {
  const pending = await pool.query('SELECT 1 FROM webhook_events WHERE client_seq IS NULL LIMIT 1');
  if (pending.rowCount === 0) return 0;
  let total = 0;
  for (;;) {
    const { numbered, positioned } = await inTransaction(pool, async (tx) => {
      const head = await tx.query<{ last_seq: string }>('SELECT last_seq FROM event_feed_head FOR UPDATE');
      return { numbered: await numberFeed(tx, head.rows[0]!.last_seq), positioned: await numberPerClient(tx) };
    });
    total += positioned;
    if (numbered < sequenceBatch && positioned < sequenceBatch) return total;
  }
}

/** feed_seq for committed events that have none, after the head `last`. */
async function numberFeed(tx: Queryable, last: string): Promise<number> {
  const numbered = await tx.query(
    `WITH batch AS (
       SELECT id, row_number() OVER (ORDER BY created_at, id) AS n
         FROM (SELECT id, created_at FROM webhook_events WHERE feed_seq IS NULL ORDER BY created_at, id LIMIT $2) s
     )
     UPDATE webhook_events e SET feed_seq = $1::bigint + batch.n FROM batch WHERE e.id = batch.id`,
    [last, sequenceBatch],
  );
  const count = numbered.rowCount ?? 0;
  if (count > 0) await tx.query('UPDATE event_feed_head SET last_seq = last_seq + $1', [count]);
  return count;
}

/**
 * client_seq, in feed order, for events that have a feed_seq and none yet (also those an earlier
 * release numbered): each client's next positions after its last one (event_feed_clients).
 */
async function numberPerClient(tx: Queryable): Promise<number> {
  const positioned = await tx.query(
    `WITH batch AS (
       SELECT id, client_id, tenant_id, row_number() OVER (PARTITION BY client_id ORDER BY feed_seq) AS n
         FROM (SELECT id, client_id, tenant_id, feed_seq FROM webhook_events
                WHERE client_seq IS NULL AND feed_seq IS NOT NULL ORDER BY feed_seq LIMIT $1) s
     ), added AS (
       SELECT client_id, tenant_id, count(*) AS n FROM batch GROUP BY client_id, tenant_id
     ), heads AS (
       INSERT INTO event_feed_clients AS c (client_id, tenant_id, last_seq)
       SELECT client_id, tenant_id, n FROM added
       ON CONFLICT (client_id) DO UPDATE SET last_seq = c.last_seq + excluded.last_seq
       RETURNING c.client_id, c.last_seq
     )
     UPDATE webhook_events e SET client_seq = heads.last_seq - added.n + batch.n
       FROM batch JOIN added USING (client_id) JOIN heads USING (client_id)
      WHERE e.id = batch.id`,
    [sequenceBatch],
  );
  return positioned.rowCount ?? 0;
}

/** Events examined per pruning step. */
const pruneBatch = 1000;

/**
 * Deletes the events recorded more than retentionMs ago, with their deliveries and attempts
 * (also those still waiting, e.g. on a disabled endpoint: retention bounds the history), as a
 * prefix of the feed's order: it stops at the first event still within retention. A client's
 * readers see what went from its kept events (one transaction deletes each step); the watermark,
 * where the next step starts, moves first, as gateways of the earlier release (global cursors)
 * need during a rollout so as never to serve a page with a pruned hole in it. Returns how many went.
 */
export async function pruneEvents(pool: Pool, retentionMs: number): Promise<number> {
  await sequenceEvents(pool); // old events nobody read yet get their positions, then go in order
  let total = 0;
  for (;;) {
    const { rows } = await pool.query<{ feed_seq: string; expired: boolean }>(
      // An event without its client's position yet (numbered by an earlier release) waits for it.
      `SELECT e.feed_seq,
              e.created_at < now() - $2 * interval '1 millisecond' AND e.client_seq IS NOT NULL AS expired
         FROM webhook_events e, event_feed_head h
        WHERE e.feed_seq > h.pruned_through ORDER BY e.feed_seq LIMIT $1`,
      [pruneBatch, retentionMs],
    );
    const firstKept = rows.findIndex((r) => !r.expired);
    const upTo = firstKept === -1 ? rows.at(-1) : rows[firstKept - 1];
    if (!upTo) return total;
    await pool.query('UPDATE event_feed_head SET pruned_through = greatest(pruned_through, $1)', [upTo.feed_seq]);
    total += await inTransaction(pool, async (tx) => {
      const doomed = (
        await tx.query<{ id: string }>('SELECT id FROM webhook_events WHERE feed_seq <= $1', [upTo.feed_seq])
      ).rows.map((r) => r.id);
      await deleteDeliveries(tx, 'event_id', doomed);
      return (await tx.query('DELETE FROM webhook_events WHERE id = ANY($1)', [doomed])).rowCount ?? 0;
    });
    if (firstKept !== -1 || rows.length < pruneBatch) return total;
  }
}
