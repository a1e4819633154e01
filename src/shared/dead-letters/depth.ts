import type { PartitionOffsets } from '../kafka/bus.js';
import { countHandledRetained } from './ledger-sql.js';

type Query = (sql: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

/**
 * Dead letters of a topic still to deal with: the messages it retains (high minus low watermark,
 * summed over partitions) minus those of them replayed or purged (dead_letters_handled). What
 * the `connect_dead_letters{topic}` metric shows; Kafka's retention lowers it too.
 */
export async function deadLetterDepth(topic: string, offsets: PartitionOffsets[], query: Query): Promise<number> {
  const retained = offsets.reduce((n, p) => n + (p.high - p.low), 0);
  if (retained === 0) return 0;
  const { rows } = await query(countHandledRetained, [
    topic,
    offsets.map((p) => p.partition),
    offsets.map((p) => p.low),
    offsets.map((p) => p.high),
  ]);
  return retained - Number(rows[0]?.handled ?? 0);
}
