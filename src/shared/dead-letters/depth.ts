import type { PartitionOffsets } from '../kafka/bus.js';
import { countHandledRetained } from './ledger-sql.js';

type Query = (sql: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

/**
 * Dead letters of each topic still to deal with: the messages it retains (high minus low
 * watermark, summed over partitions) minus those of them replayed or purged
 * (dead_letters_handled). What the `connect_dead_letters{topic}` metric shows; Kafka's retention
 * lowers it too. One statement for all topics, none when no topic retains anything.
 */
export async function deadLetterDepths(
  offsets: Map<string, PartitionOffsets[]>,
  query: Query,
): Promise<Map<string, number>> {
  const retained = new Map([...offsets].map(([topic, ps]) => [topic, ps.reduce((n, p) => n + (p.high - p.low), 0)]));
  const rows = [...offsets].flatMap(([topic, ps]) => ps.filter((p) => p.high > p.low).map((p) => ({ topic, ...p })));
  if (rows.length === 0) return retained;
  const handled = await query(countHandledRetained, [
    rows.map((r) => r.topic),
    rows.map((r) => r.partition),
    rows.map((r) => r.low),
    rows.map((r) => r.high),
  ]);
  for (const r of handled.rows) {
    const topic = String(r.topic);
    retained.set(topic, (retained.get(topic) ?? 0) - Number(r.handled));
  }
  return retained;
}
