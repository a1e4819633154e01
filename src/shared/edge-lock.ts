import type { Queryable } from './db/pool.js';

// The gateway's edge transaction holds an advisory lock named after the record it creates from
// before it produces until it commits or rolls back. A worker that finds a message's record
// missing past the orphan grace asks whether that lock is still held: if so, the gateway is still
// on its way to committing (a stalled process, a slow commit) and the worker keeps waiting
// instead of skipping a message whose record will appear.

const key = (recordId: string) => `edge:${recordId}`;

/** In the edge transaction, before producing: held until it ends. */
export async function lockEdgeRecord(tx: Queryable, recordId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key(recordId)]);
}

/** True when no edge transaction for recordId is open (the try-lock is released at once). */
export async function edgeWriterDone(db: Queryable, recordId: string): Promise<boolean> {
  const { rows } = await db.query('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS done', [key(recordId)]);
  return rows[0].done === true;
}
