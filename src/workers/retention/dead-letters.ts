import type { Pool } from '../../shared/db/pool.js';
import type { PartitionOffsets } from '../../shared/kafka/bus.js';
import { inPruneBatches } from './batches.js';

/** A dead-letter topic's partitions and their watermarks (the worker's bus.topicOffsets); [] for a topic Kafka does not have. */
export type DeadLetterOffsets = (topic: string) => Promise<PartitionOffsets[]>;

/**
 * The low watermark of every partition of these topics, as three arrays for unnest. A topic whose
 * offsets cannot be read (Kafka down, or the topic is gone) gives none: its marks stay held.
 */
async function lowWatermarks(topics: string[], offsets: DeadLetterOffsets | undefined, { strict = false } = {}) {
  const read = await Promise.all(
    topics.map(async (t) => ({
      t,
      ps: offsets ? await offsets(t).catch((err: unknown) => (strict ? Promise.reject(err) : [])) : [],
    })),
  );
  const rows = read.flatMap(({ t, ps }) => ps.map((p) => ({ topic: t, partition: p.partition, low: p.low })));
  return [rows.map((r) => r.topic), rows.map((r) => r.partition), rows.map((r) => String(r.low))];
}

/**
 * A mark (dead_letters_handled row `h`) is released once Kafka no longer retains its dead letter:
 * its offset is below its partition's low watermark ($1 topics, $2 partitions, $3 low watermarks).
 * Until then it is what keeps a replayed or purged dead letter out of lists, replays and the
 * connect_dead_letters metric, whatever its age.
 */
const released = `EXISTS (
  SELECT FROM unnest($1::text[], $2::int[], $3::bigint[]) AS w(topic, partition, low)
   WHERE w.topic = h.dlq_topic AND w.partition = h.dlq_partition AND h.dlq_offset < w.low)`;

/** An action (`a`) still holds a dead letter Kafka retains: it is kept, whatever its age. */
const holds = `EXISTS (SELECT FROM dead_letters_handled h WHERE h.action_id = a.id AND NOT ${released})`;

/** Made more than $n milliseconds ago. */
const pastRetention = (n: number) => `a.at < now() - make_interval(secs => $${n}::double precision / 1000)`;

/**
 * Deletes operators' dead-letter replays and purges (dead_letter_actions) made more than
 * `retentionMs` ago, with their marks (dead_letters_handled), in batches of `batchSize` (issue
 * 51): first the marks of such actions whose dead letter Kafka no longer retains (below the low
 * watermark of its partition, read through `offsets`), then the actions that have no mark left.
 * A mark of a dead letter its topic still retains is never deleted (that dead letter would come
 * back as unhandled), nor its action; without `offsets`, or when a topic's offsets cannot be read,
 * only actions that marked nothing go. Rows another transaction holds are skipped, never waited
 * for. `signal` ends the round between batches.
 */
export async function pruneDeadLetterRecords(
  pool: Pool,
  retentionMs: number,
  { offsets, ...batches }: { offsets?: DeadLetterOffsets; batchSize?: number; signal?: AbortSignal } = {},
) {
  const pruned = { actions: 0, marks: 0 };
  // The topics of the actions past retention: operators' actions are few, and so are their topics.
  const { rows: topics } = await pool.query<{ dlq_topic: string }>(
    `SELECT DISTINCT a.dlq_topic FROM dead_letter_actions a WHERE ${pastRetention(1)}`,
    [retentionMs],
  );
  const watermarks = await lowWatermarks(
    topics.map((r) => r.dlq_topic),
    offsets,
  );
  pruned.marks = await inPruneBatches(pool, batches, async (tx, batchSize) => {
    const { rowCount } = await tx.query(
      `DELETE FROM dead_letters_handled WHERE (dlq_topic, dlq_partition, dlq_offset) IN (
         SELECT h.dlq_topic, h.dlq_partition, h.dlq_offset
           FROM dead_letter_actions a JOIN dead_letters_handled h ON h.action_id = a.id
          WHERE ${pastRetention(4)} AND ${released}
          LIMIT $5 FOR UPDATE OF h SKIP LOCKED)`,
      [...watermarks, retentionMs, batchSize],
    );
    return rowCount ?? 0;
  });
  pruned.actions = await inPruneBatches(pool, batches, async (tx, batchSize) => {
    const { rowCount } = await tx.query(
      `DELETE FROM dead_letter_actions WHERE id IN (
         SELECT a.id FROM dead_letter_actions a
          WHERE ${pastRetention(1)}
            AND NOT EXISTS (SELECT FROM dead_letters_handled h WHERE h.action_id = a.id)
          ORDER BY a.at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [retentionMs, batchSize],
    );
    return rowCount ?? 0;
  });
  return pruned;
}

/**
 * Seconds since the oldest dead-letter action that holds no dead letter Kafka retains was made
 * (null: none): what retention_oldest_age_seconds{table="dead_letter_actions"} shows. Actions
 * that still hold one are left out: they are kept on purpose, however old.
 */
export async function oldestReleasedDeadLetterActionSeconds(
  query: (sql: string, values: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>,
  offsets: DeadLetterOffsets | undefined,
): Promise<number | null> {
  const { rows: topics } = await query('SELECT DISTINCT dlq_topic FROM dead_letter_actions', []);
  if (topics.length === 0) return null;
  // A reading that fails fails the scrape's reading (counted), rather than hiding what is behind.
  const watermarks = await lowWatermarks(
    topics.map((r) => String(r.dlq_topic)),
    offsets,
    { strict: true },
  );
  const { rows } = await query(
    `SELECT extract(epoch FROM now() - min(a.at))::float8 AS age FROM dead_letter_actions a WHERE NOT ${holds}`,
    watermarks,
  );
  const age = rows[0]?.age;
  return age === null || age === undefined ? null : Number(age);
}
