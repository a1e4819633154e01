// Why a write found no edge connection within the pool's wait (pg-pool says only "timeout
// exceeded when trying to connect"), so its 503 names what is really missing.

/** What the edge transactions of one pool are doing, as recordThenProduce reports it. */
export class EdgeTransactions {
  private readonly open = new Set<{ onKafka: boolean }>();
  private lastCommitAt = -Infinity;

  /** A transaction got its connection; call the returned functions as it goes, release() last. */
  begin() {
    const tx = { onKafka: false };
    this.open.add(tx);
    return {
      waitingOnKafka: (waiting: boolean) => void (tx.onKafka = waiting),
      committed: () => void (this.lastCommitAt = performance.now()),
      release: () => void this.open.delete(tx),
    };
  }

  /** The counts causeOfEdgeWait judges, for a wait that started at `since` (performance.now()). */
  snapshot(since: number) {
    let onKafka = 0;
    for (const tx of this.open) if (tx.onKafka) onKafka++;
    return { held: this.open.size, onKafka, committedDuringWait: this.lastCommitAt >= since };
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
  committedDuringWait: boolean;
}): EdgeWaitCause {
  if (!s.kafkaAvailable) return 'Kafka';
  if (s.held < s.max) return 'PostgreSQL';
  if (s.committedDuringWait) return 'busy';
  return s.onKafka * 2 >= s.held ? 'Kafka' : 'PostgreSQL';
}
