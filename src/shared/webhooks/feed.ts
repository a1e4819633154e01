import { inTransaction, type Pool, type PoolClient } from '../db/pool.js';

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
 * an event's NOTIFY finds it). Returns how many events it numbered.
 */
export async function sequenceEvents(pool: Pool): Promise<number> {
  const pending = await pool.query('SELECT 1 FROM webhook_events WHERE feed_seq IS NULL LIMIT 1');
  if (pending.rowCount === 0) return 0;
  let total = 0;
  for (;;) {
    const n = await inTransaction(pool, async (tx) => {
      const head = await tx.query<{ last_seq: string }>('SELECT last_seq FROM event_feed_head FOR UPDATE');
      const last = head.rows[0]!.last_seq;
      // feed_seq after the head; client_seq in the same order, after each client's last position.
      const numbered = await tx.query(
        `WITH batch AS (
           SELECT id, client_id, tenant_id,
                  row_number() OVER (ORDER BY created_at, id) AS n,
                  row_number() OVER (PARTITION BY client_id ORDER BY created_at, id) AS k
             FROM (SELECT id, client_id, tenant_id, created_at FROM webhook_events
                    WHERE feed_seq IS NULL ORDER BY created_at, id LIMIT $2) s
         ), added AS (
           SELECT client_id, tenant_id, count(*) AS n FROM batch GROUP BY client_id, tenant_id
         ), heads AS (
           INSERT INTO event_feed_clients AS c (client_id, tenant_id, last_seq)
           SELECT client_id, tenant_id, n FROM added
           ON CONFLICT (client_id) DO UPDATE SET last_seq = c.last_seq + excluded.last_seq
           RETURNING c.client_id, c.last_seq
         )
         UPDATE webhook_events e SET feed_seq = $1::bigint + batch.n, client_seq = heads.last_seq - added.n + batch.k
           FROM batch JOIN added USING (client_id) JOIN heads USING (client_id)
          WHERE e.id = batch.id`,
        [last, sequenceBatch],
      );
      const count = numbered.rowCount ?? 0;
      if (count > 0) await tx.query('UPDATE event_feed_head SET last_seq = last_seq + $1', [count]);
      return count;
    });
    total += n;
    if (n < sequenceBatch) return total;
  }
}

/** Events examined per pruning step. */
const pruneBatch = 1000;

/** Rows one pruning statement deletes at most (attempts, deliveries; Svix and River delete in such batches). */
export const pruneDeleteBatch = 5000;

/** How long one pruning statement may take (SET LOCAL statement_timeout): a batch, never a table scan's worth. */
export const pruneStatementTimeoutMs = 30_000;

/** A transaction of the pruner, its statements bounded by pruneStatementTimeoutMs. */
const pruneTx = <T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>) =>
  inTransaction(pool, async (tx) => {
    await tx.query(`SET LOCAL statement_timeout = ${pruneStatementTimeoutMs}`);
    return fn(tx);
  });

/**
 * Deletes the events recorded more than retentionMs ago, with their deliveries and attempts
 * (also those still waiting, e.g. on a disabled endpoint: retention bounds the history), as a
 * prefix of the feed's order: it stops at the first event still within retention. The watermark,
 * where the next step starts, moves first in a statement of its own: it is event_feed_head's row,
 * which sequencing locks, so it is not held while the step deletes; a reader's cursor at or before
 * it is told it is gone from then on. Each step (up to pruneBatch events) then deletes in bounded
 * transactions, each statement at most pruneDeleteBatch rows under pruneStatementTimeoutMs: the
 * attempts, then the deliveries (each batch locked first, with the attempts recorded since, in the
 * order a dispatcher recording an attempt locks them), then the events. Returns how many events
 * went. Run by one dispatcher at a time (workers/webhooks/prune.ts); safe, if wasteful, side by side.
 */
export async function pruneEvents(pool: Pool, retentionMs: number): Promise<number> {
  await sequenceEvents(pool); // old events nobody read yet get their positions, then go in order
  let total = 0;
  for (;;) {
    const { rows } = await pool.query<{ feed_seq: string; expired: boolean }>(
      `SELECT e.feed_seq, e.created_at < now() - $2 * interval '1 millisecond' AS expired
         FROM webhook_events e, event_feed_head h
        WHERE e.feed_seq > h.pruned_through ORDER BY e.feed_seq LIMIT $1`,
      [pruneBatch, retentionMs],
    );
    const firstKept = rows.findIndex((r) => !r.expired);
    const upTo = firstKept === -1 ? rows.at(-1) : rows[firstKept - 1];
    if (!upTo) return total;
    await pool.query('UPDATE event_feed_head SET pruned_through = greatest(pruned_through, $1)', [upTo.feed_seq]);
    total += await pruneThrough(pool, upTo.feed_seq);
    if (firstKept !== -1 || rows.length < pruneBatch) return total;
  }
}

/** Deletes the events at or before feed position upTo (past the watermark), in bounded batches. */
async function pruneThrough(pool: Pool, upTo: string): Promise<number> {
  const doomed = (
    await pool.query<{ id: string }>('SELECT id FROM webhook_events WHERE feed_seq <= $1', [upTo])
  ).rows.map((r) => r.id);
  if (doomed.length === 0) return 0;
  const inBatches = async (sql: string) => {
    for (;;) {
      const n = await pruneTx(pool, async (tx) => (await tx.query(sql, [doomed, pruneDeleteBatch])).rowCount ?? 0);
      if (n < pruneDeleteBatch) return;
    }
  };
  await inBatches(
    `DELETE FROM webhook_attempts WHERE id = ANY(ARRAY(
       SELECT id FROM webhook_attempts WHERE event_id = ANY($1) LIMIT $2))`,
  );
  // Deliveries: each batch locked first, then the attempts recorded since the sweep above (by a
  // dispatcher still trying one), then the batch: the order a dispatcher recording an attempt locks.
  for (;;) {
    const n = await pruneTx(pool, async (tx) => {
      const ids = (
        await tx.query<{ id: string }>(
          'SELECT id FROM webhook_deliveries WHERE event_id = ANY($1) LIMIT $2 FOR UPDATE',
          [doomed, pruneDeleteBatch],
        )
      ).rows.map((r) => r.id);
      if (ids.length === 0) return 0;
      await tx.query('DELETE FROM webhook_attempts WHERE delivery_id = ANY($1)', [ids]);
      return (await tx.query('DELETE FROM webhook_deliveries WHERE id = ANY($1)', [ids])).rowCount ?? 0;
    });
    if (n < pruneDeleteBatch) break;
  }
  return pruneTx(
    pool,
    async (tx) => (await tx.query('DELETE FROM webhook_events WHERE id = ANY($1)', [doomed])).rowCount ?? 0,
  );
}
