// Why a write found no edge connection within the pool's wait (pg-pool says only "timeout
// exceeded when trying to connect"), so its 503 names what is really missing.

/** What the edge transactions of one pool are doing, as recordThenProduce reports it. */
export class EdgeTransactions {
  /** Each open transaction: since when it waits for Kafka's acknowledgement (null: it does not). */
  private readonly open = new Set<{ kafkaSince: number | null }>();
  private lastCommitAt = -Infinity;
  private lastKafkaFailureAt = -Infinity;

  /** A transaction got its connection; call the returned functions as it goes, release() last. */
  begin() {
    const tx: { kafkaSince: number | null } = { kafkaSince: null };
    this.open.add(tx);
    return {
      waitingOnKafka: (waiting: boolean) => void (tx.kafkaSince = waiting ? performance.now() : null),
      committed: () => void (this.lastCommitAt = performance.now()),
      kafkaFailed: () => void (this.lastKafkaFailureAt = performance.now()),
      release: () => void this.open.delete(tx),
    };
  }

  /** The counts causeOfEdgeWait judges, for a wait that started at `since` (performance.now()). */
  snapshot(since: number) {
    let onKafka = 0;
    let onKafkaThroughout = 0;
    for (const tx of this.open) {
      if (tx.kafkaSince === null) continue;
      onKafka++;
      if (tx.kafkaSince <= since) onKafkaThroughout++;
    }
    return {
      held: this.open.size,
      onKafka,
      onKafkaThroughout,
      committedDuringWait: this.lastCommitAt >= since,
      kafkaFailedDuringWait: this.lastKafkaFailureAt >= since,
    };
  }
}

const byPool = new WeakMap<object, EdgeTransactions>();

/** The edge transactions of one pool (a TenantPool). */
export function edgeTransactionsOf(pool: object): EdgeTransactions {
  let t = byPool.get(pool);
  if (!t) byPool.set(pool, (t = new EdgeTransactions()));
  return t;
}

export type EdgeWaitCause = 'Kafka' | 'PostgreSQL' | 'busy';

/**
 * - Kafka known down → Kafka.
 * - A slot was free yet no connection came: PostgreSQL did not open one in time → PostgreSQL.
 * - A transaction gave up on Kafka's acknowledgement during the wait, or most holders have waited
 *   for it for the whole wait → Kafka, even if others committed meanwhile: a partition without its
 *   leader holds the transactions producing to it while the rest flow (seen as 429s in the
 *   three-broker test's leader kill under load).
 * - Every slot held and some transaction committed meanwhile: the dependencies answer, there is
 *   more work than connections → busy.
 * - Every slot held and none committed: the holders are stuck, on what most of them wait for
 *   (Kafka's acknowledgement, or PostgreSQL: a statement, a lock).
 */
export function causeOfEdgeWait(s: {
  kafkaAvailable: boolean;
  max: number;
  held: number;
  onKafka: number;
  onKafkaThroughout: number;
  committedDuringWait: boolean;
  kafkaFailedDuringWait: boolean;
}): EdgeWaitCause {
  if (!s.kafkaAvailable) return 'Kafka';
  if (s.held < s.max) return 'PostgreSQL';
  if (s.kafkaFailedDuringWait || s.onKafkaThroughout * 2 >= s.held) return 'Kafka';
  if (s.committedDuringWait) return 'busy';
  return s.onKafka * 2 >= s.held ? 'Kafka' : 'PostgreSQL';
}
