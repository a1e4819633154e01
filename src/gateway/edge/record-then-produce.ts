import type { Config } from '../../shared/config.js';
import { isPostgresUnavailable } from '../../shared/db/errors.js';
import { abandonTransaction } from '../../shared/db/pool.js';
import type { TenantPool, TenantTx } from '../../shared/db/tenant-scope.js';
import { lockEdgeRecord } from '../../shared/edge-lock.js';
import { AppError, busy, unavailable } from '../../shared/errors.js';
import type { MessageBus, OutboundMessage } from '../../shared/kafka/bus.js';
import { causeOfEdgeWait, edgeTransactionsOf } from './edge-wait.js';

/**
 * What a write operation needs. Separate pools, so writes cannot starve reads: `edgePool` holds
 * the connections that wait for Kafka's acknowledgement inside an edge transaction (at most
 * KAFKA_PRODUCE_TIMEOUT_MS each); `tenantPool` serves the tenant's reads and short synchronous
 * writes. Both are scoped (shared/db/tenant-scope.ts).
 */
export type WriteDeps = {
  tenantPool: TenantPool;
  edgePool: TenantPool;
  bus: MessageBus;
  config: Pick<Config, 'kafka' | 'inbound'>;
};

export type EdgeWrite<T> = {
  result: T;
  /**
   * What to hand to the workers; absent when nothing new was recorded (an idempotent replay).
   * recordId: the id of the new edge record the messages name (see shared/edge-lock.ts).
   */
  produce?: { topic: string; messages: OutboundMessage[]; recordId: string };
};

/**
 * The edge ledger's one write pattern: record the edge rows and produce the work in ONE
 * PostgreSQL transaction that commits only after Kafka acknowledged (acks=all). The transaction
 * is scoped to the caller's tenant (shared/db/tenant-scope.ts): the write sees no other tenant's rows.
 *
 * - Kafka known unreachable → 503 at once, before a connection is taken.
 * - No edge connection within the pool's wait → 503 naming why: Kafka, PostgreSQL, or busy
 *   (service_busy) when both answer but every connection is in use (edge-wait.ts).
 * - Kafka fails → rollback → 503: nothing recorded, the client retries.
 * - Kafka acked, commit fails (crash, PostgreSQL gone) → no row, no 2xx; the produced messages
 *   name an id that never committed, and workers drop them after a grace period
 *   (see workers' orphan handling): no record stays "Queued" without its messages.
 * - A concurrent request with the same idempotency key blocks on the unique index until this
 *   one commits, then sees it as a replay: exactly one production per key. That row lock and the
 *   advisory lock on the new record's own id (shared/edge-lock.ts, so workers can tell a slow
 *   commit from a rollback) are the only locks held across the wait for Kafka; write callbacks
 *   must not take shared ones.
 */
export async function recordThenProduce<T>(
  deps: Pick<WriteDeps, 'edgePool' | 'bus'>,
  tenantId: string,
  write: (tx: TenantTx) => Promise<EdgeWrite<T>>,
): Promise<T> {
  if (!deps.bus.available()) throw unavailable('Kafka');
  const transactions = edgeTransactionsOf(deps.edgePool);
  const waitStarted = performance.now();
  let tx: TenantTx;
  try {
    tx = await deps.edgePool.connect(tenantId);
  } catch (err) {
    if (err instanceof AppError && err.code === 'database_share_exceeded') throw shareRefusal(deps, waitStarted, err);
    throw noConnection(deps, waitStarted);
  }
  const state = transactions.begin();
  let phase: 'postgres' | 'kafka' = 'postgres';
  let broken: Error | undefined;
  try {
    await tx.query('BEGIN');
    const { result, produce } = await write(tx);
    if (produce) {
      await lockEdgeRecord(tx, produce.recordId);
      phase = 'kafka';
      state.waitingOnKafka(true);
      await deps.bus.produce(produce.topic, produce.messages);
      state.waitingOnKafka(false);
      phase = 'postgres';
    }
    await tx.query('COMMIT');
    state.committed();
    return result;
  } catch (err) {
    broken = await abandonTransaction(tx, err); // e.g. 25006: a read-only old primary is not kept in the pool
    if (phase === 'kafka') {
      state.kafkaFailed();
      throw unavailable('Kafka');
    }
    if (isPostgresUnavailable(err)) throw unavailable('PostgreSQL');
    throw err;
  } finally {
    state.release();
    tx.release(broken);
  }
}

/**
 * A write its tenant's share of the edge pool refused (db/tenant-shares.ts): the 429 when the
 * tenant's own work fills its share (its queue is full, or its transactions commit and there is
 * just more of them than its share), but the 503 naming the dependency when the transactions it
 * waited behind are stuck on Kafka or PostgreSQL (nothing committed during the wait: edge-wait.ts).
 */
function shareRefusal(deps: Pick<WriteDeps, 'edgePool' | 'bus'>, waitStarted: number, refusal: AppError): AppError {
  if (refusal.details?.reason === 'queue_full') return refusal;
  const held = edgeTransactionsOf(deps.edgePool).snapshot(waitStarted);
  const cause = causeOfEdgeWait({ kafkaAvailable: deps.bus.available(), ...held, max: held.held });
  if (cause === 'Kafka') return unavailable('Kafka');
  if (cause === 'PostgreSQL') return unavailable('PostgreSQL');
  return refusal;
}

/** The 503 for a write that got no edge connection within the pool's wait (see edge-wait.ts). */
function noConnection(deps: Pick<WriteDeps, 'edgePool' | 'bus'>, waitStarted: number): AppError {
  const cause = causeOfEdgeWait({
    kafkaAvailable: deps.bus.available(),
    max: deps.edgePool.max,
    ...edgeTransactionsOf(deps.edgePool).snapshot(waitStarted),
  });
  if (cause === 'Kafka') return unavailable('Kafka');
  if (cause === 'PostgreSQL') return unavailable('PostgreSQL');
  return busy('Every write connection of the gateway is in use');
}
