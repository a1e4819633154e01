import type { PoolClient } from '../shared/db/pool.js';
import type { Logger } from '../shared/logger.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits for the edge record a message names. The gateway commits its record only after Kafka
 * acknowledged the message, so a worker can see the message a moment before the row: wait up to
 * graceMs after producedAt. Still missing then, with the gateway's edge transaction over (its
 * advisory lock free) → the gateway rolled back (it answered 503, or crashed before answering):
 * an orphan, which is skipped. Returns the locked row or null.
 */
export async function awaitEdgeRecord<R>(
  load: () => Promise<R | null>,
  producedAt: string,
  graceMs: number,
  heartbeat: () => Promise<void>,
  log: Logger,
  what: string,
  /** Whether the gateway's edge transaction for this record has ended (shared/edge-lock.ts). */
  writerDone: () => Promise<boolean>,
): Promise<R | null> {
  for (;;) {
    const row = await load();
    if (row) return row;
    // Past the grace, and the gateway's transaction is over without the row: it rolled back. If
    // it is still open (a stalled gateway), the row may yet commit: keep waiting.
    if (Date.now() - Date.parse(producedAt) > graceMs && (await writerDone())) {
      log.warn({ what, producedAt }, 'orphan message skipped: its edge record never committed');
      return null;
    }
    await sleep(250);
    await heartbeat();
  }
}

export type { PoolClient };
