import type { Config } from '../shared/config.js';
import { edgeWriterDone } from '../shared/edge-lock.js';
import type { WorkerDeps } from './worker-kind.js';

/**
 * A message came before its edge record. The gateway commits the record only after Kafka
 * acknowledged the message, so a worker can see the message a moment before the row. The apply
 * gives up its transaction and throws this; the consumer loop tries the message again a little
 * later (schedules.edgeRecordWait), holding nothing meanwhile but the message's own key.
 */
export class EdgeRecordPending extends Error {
  constructor(readonly what: string) {
    super(`${what}: its edge record is not committed yet`);
  }
}

export type EdgeWait = {
  /** When the gateway produced the message (ISO 8601). */
  producedAt: string;
  /** How long after producedAt a missing record may still come (ORPHAN_GRACE_MS). */
  graceMs: number;
  /** Whether the gateway's edge transaction for the record has ended (shared/edge-lock.ts). */
  writerDone: () => Promise<boolean>;
  /** Names the record in logs and errors. */
  what: string;
};

/**
 * The edge record a message names, loaded (and locked) by the caller in its transaction: returns
 * it when there; null when it never will be (past the grace, and the gateway's edge transaction
 * is over without it: the gateway rolled back, after a 503 or a crash — an orphan, to skip);
 * otherwise throws EdgeRecordPending. A record whose gateway transaction is still open (a stalled
 * gateway) may yet commit, so it is waited for past the grace.
 */
export async function edgeRecordOrWait<R>(row: R | null | undefined, wait: EdgeWait): Promise<R | null> {
  if (row) return row;
  if (Date.now() - Date.parse(wait.producedAt) > wait.graceMs && (await wait.writerDone())) return null;
  throw new EdgeRecordPending(wait.what);
}

/** The wait for a message's edge record `recordId`, under this worker's orphan grace. */
export const edgeWait = (
  deps: Pick<WorkerDeps, 'pool'> & { config: Pick<Config, 'workers'> },
  { producedAt, recordId, what }: { producedAt: string; recordId: string; what: string },
): EdgeWait => ({
  producedAt,
  graceMs: deps.config.workers.orphanGraceMs,
  writerDone: () => edgeWriterDone(deps.pool, recordId),
  what,
});
