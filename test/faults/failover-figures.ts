// What a broker's loss costs the clients (issue 29): the write latency of partitions whose leader
// lived, and how long each worker kind took to apply again. Figures are printed, not asserted
// (the machine is shared); the tests assert what is structural.
import { Kafka, logLevel } from 'kafkajs';
import type pg from 'pg';
import { partitionOf } from '../../src/shared/kafka/partitions.js';
import type { Load, Write } from './harness.js';

/** Partition leaders (node ids, by partition) of topics, read through the test's own client. */
export async function leadersOf(brokers: string, topics: string[]): Promise<Map<string, number[]>> {
  const admin = new Kafka({
    clientId: 'failover-figures',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const { topics: found } = await admin.fetchTopicMetadata({ topics });
    return new Map(
      found.map((t) => [t.name, [...t.partitions].sort((a, b) => a.partitionId - b.partitionId).map((p) => p.leader)]),
    );
  } finally {
    await admin.disconnect();
  }
}

/** Java's String.hashCode, which Kafka hashes a group id with to place it in __consumer_offsets. */
function javaHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** The node coordinating groupId: the leader of its __consumer_offsets partition. */
export async function coordinatorOf(brokers: string, groupId: string): Promise<number> {
  const leaders = (await leadersOf(brokers, ['__consumer_offsets'])).get('__consumer_offsets')!;
  const hash = javaHashCode(groupId);
  return leaders[(hash === -2147483648 ? 0 : Math.abs(hash)) % leaders.length]!;
}

/** Whether `node` still leads a partition of the topics (its partitions wait for a new leader). */
export async function stillLeads(brokers: string, topics: string[], node: number): Promise<boolean> {
  const leaders = await leadersOf(brokers, topics).catch(() => null);
  return !leaders || [...leaders.values()].some((ls) => ls.includes(node));
}

/** The topics a write's messages may go to (an inbound import takes the express lane or not). */
export type WriteTopics = { inbound: string[]; jobs: string };

/**
 * Whether a write's partition was led by a live broker: `lost` is the node that died, `leaders`
 * the leaders before it died. Keys are the record ids the gateway answers with.
 */
function healthy(w: Write, topics: WriteTopics, leaders: Map<string, number[]>, lost: number): boolean {
  const candidates = w.kind === 'job' ? [topics.jobs] : topics.inbound;
  return candidates.every((topic) => {
    const ls = leaders.get(topic)!;
    return ls[partitionOf(topic, { key: w.ack!.id, value: '' }, ls.length)] !== lost;
  });
}

function percentile(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!);
}

/**
 * Latency of the acknowledged attempt of writes to partitions whose leader lived, before the kill
 * and between it and `until` (the lost partitions' new leaders). ackedDuring: how many of them
 * were acknowledged in that window in attempts started a second or more after the kill; none when
 * every send waits behind one to a lost partition (one such is under way within that second).
 */
export function healthyWriteFigures(
  load: Load,
  window: { killed: number; until: number },
  topics: WriteTopics,
  leaders: Map<string, number[]>,
  lost: number,
) {
  const started = (w: Write) => w.attempts.at(-1)!.start;
  const acked = load.acked().filter((w) => healthy(w, topics, leaders, lost));
  const latency = (ws: Write[]) => ws.map((w) => w.ack!.at - started(w));
  const before = acked.filter((w) => w.ack!.at < window.killed);
  const during = acked.filter((w) => started(w) >= window.killed && w.ack!.at < window.until);
  const figures = (ws: Write[]) => `${percentile(latency(ws), 0.5)}/${percentile(latency(ws), 0.99)} ms`;
  return {
    ackedDuring: during.filter((w) => started(w) >= window.killed + 1000).length,
    line:
      `writes to partitions of live leaders p50/p99 ${figures(before)} before the kill (${before.length}), ` +
      `${figures(during)} (${during.length}) in the ${((window.until - window.killed) / 1000).toFixed(1)} s ` +
      'until the lost partitions had new leaders',
  };
}

/**
 * Seconds from `since` until each worker kind applied something acknowledged after it (null:
 * nothing yet; 'no writes': nothing of that kind was acknowledged after it, e.g. every usage sent
 * meanwhile went to a partition of the dead leader and was answered 503): inbound imports
 * completed, jobs materialised, material usages applied.
 */
export async function appliedAgain(pool: pg.Pool, tenantId: string, since: number) {
  const { rows } = await pool.query<{ kind: string; first: Date | null; written: number }>(
    `SELECT 'inbound' AS kind, min(completed_at) AS first, count(*)::int AS written FROM import_jobs
      WHERE tenant_id = $1 AND created_at >= $2
     UNION ALL
     SELECT 'jobs', min(materialized_at), count(*)::int FROM job_requests
      WHERE tenant_id = $1 AND created_at >= $2
     UNION ALL
     SELECT 'materials', min(applied_at), count(*)::int FROM material_usages
      WHERE tenant_id = $1 AND created_at >= $2`,
    [tenantId, new Date(since)],
  );
  return Object.fromEntries(
    rows.map((r) => [
      r.kind,
      r.written === 0 ? 'no writes' : r.first ? Math.round((r.first.getTime() - since) / 100) / 10 : null,
    ]),
  ) as Record<'inbound' | 'jobs' | 'materials', number | null | 'no writes'>;
}
