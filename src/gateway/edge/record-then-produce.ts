import type { Pool, PoolClient } from '../../shared/db/pool.js';
import { isConnectionError } from '../../shared/db/errors.js';
import { unavailable } from '../../shared/errors.js';
import type { MessageBus, OutboundMessage } from '../../shared/kafka/bus.js';

export type EdgeWrite<T> = {
  result: T;
  /** What to hand to the workers; absent when nothing new was recorded (an idempotent replay). */
  produce?: { topic: string; messages: OutboundMessage[] };
};

/**
 * The edge ledger's one write pattern: record the edge rows and produce the work in ONE
 * PostgreSQL transaction that commits only after Kafka acknowledged (acks=all).
 *
 * - Kafka fails → rollback → 503: nothing recorded, the client retries.
 * - Kafka acked, commit fails (crash, PostgreSQL gone) → no row, no 2xx; the produced messages
 *   name an id that never committed, and workers drop them after a grace period
 *   (see workers' orphan handling): no record stays "Queued" without its messages.
 * - A concurrent request with the same idempotency key blocks on the unique index until this
 *   one commits, then sees it as a replay: exactly one production per key.
 */
export async function recordThenProduce<T>(
  pool: Pool,
  bus: MessageBus,
  write: (tx: PoolClient) => Promise<EdgeWrite<T>>,
): Promise<T> {
  let tx: PoolClient;
  try {
    tx = await pool.connect();
  } catch {
    throw unavailable('PostgreSQL');
  }
  let phase: 'postgres' | 'kafka' = 'postgres';
  try {
    await tx.query('BEGIN');
    const { result, produce } = await write(tx);
    if (produce) {
      phase = 'kafka';
      await bus.produce(produce.topic, produce.messages);
      phase = 'postgres';
    }
    await tx.query('COMMIT');
    return result;
  } catch (err) {
    await tx.query('ROLLBACK').catch(() => undefined);
    if (phase === 'kafka') throw unavailable('Kafka');
    if (isConnectionError(err)) throw unavailable('PostgreSQL');
    throw err;
  } finally {
    tx.release();
  }
}
