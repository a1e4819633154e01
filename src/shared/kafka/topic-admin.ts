// The admin side of the bus: topics (created or checked), consumer lag, and the cheap probe that
// tells whether a broker answers.
import type { Admin } from 'kafkajs';
import type { Logger } from '../logger.js';
import { retrying, schedules } from '../retry.js';
import { withTimeout } from '../timeout.js';
import { memoConnect } from './memo-connect.js';
import { TopicsNotReadyError, type PartitionLag, type PartitionOffsets, type TopicSpec } from './message-bus.js';
import { partitionOffsets } from './topic-reader.js';

export type TopicAdmin = {
  /** The main client's admin, connected (partitionCounts reads metadata through it). */
  connected(): Promise<Admin>;
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  /** One metadata request through the probe's client (no retries); throws past timeoutMs. */
  probe(timeoutMs: number, what: string): Promise<void>;
  consumerLag(groupId: string, topics: string[], timeoutMs: number): Promise<PartitionLag[]>;
  /** Through the probe's client, as consumerLag (metrics read it at scrape time). */
  topicOffsets(topic: string, timeoutMs: number): Promise<PartitionOffsets[]>;
  /** Whether the topic exists, through the main client. */
  topicExists(topic: string, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
};

/**
 * admin: the main client's, which retries; probe: a client without retries and a short connect
 * timeout, for questions that must fail fast (health, lag at scrape time, start checks).
 */
export function createTopicAdmin(admin: Admin, probe: Admin, manageTopics: boolean, log: Logger): TopicAdmin {
  const connectAdmin = memoConnect(() => admin.connect());
  const connectProbe = memoConnect(() => probe.connect());

  return {
    connected: () => connectAdmin().then(() => admin),

    async ensureTopics(topics) {
      await connectAdmin();
      // A broker that has just started (or just created other topics) can answer "does not
      // host this topic-partition" while leaders are elected: retriable, so retry a while.
      await retrying(
        schedules.topicCreation,
        async () => {
          const existing = new Set(await admin.listTopics());
          const missing = topics.filter((t) => !existing.has(t.topic));
          if (!manageTopics) return checkManagedTopics(admin, topics, missing);
          if (missing.length === 0) return;
          await admin.createTopics({
            waitForLeaders: true,
            topics: missing.map((t) => ({
              topic: t.topic,
              numPartitions: t.partitions,
              replicationFactor: t.replicationFactor ?? -1,
              configEntries: Object.entries(t.configs ?? {}).map(([name, value]) => ({ name, value })),
            })),
          });
        },
        {
          retriable: (err) => (err as { retriable?: boolean }).retriable === true,
          onRetry: (err, attempt) => log.warn({ err, attempt }, 'creating topics failed; retrying'),
        },
      );
    },

    async probe(timeoutMs, what) {
      await withTimeout(
        connectProbe().then(() => probe.describeCluster()),
        timeoutMs,
        what,
      );
    },

    // Through the probe's client: a scrape while the broker is away fails fast instead of leaving
    // retrying requests behind.
    async consumerLag(groupId, topics, timeoutMs) {
      const read = async () => {
        await connectProbe();
        const [committed, ends] = await Promise.all([
          probe.fetchOffsets({ groupId, topics }),
          Promise.all(topics.map(async (topic) => ({ topic, partitions: await probe.fetchTopicOffsets(topic) }))),
        ]);
        const committedAt = new Map(
          committed.flatMap((t) => t.partitions.map((p) => [`${t.topic}/${p.partition}`, Number(p.offset)] as const)),
        );
        return ends.flatMap(({ topic, partitions }) =>
          partitions.map((p) => {
            const done = committedAt.get(`${topic}/${p.partition}`) ?? -1; // -1: nothing committed
            const from = done >= 0 ? done : Number(p.low);
            return { topic, partition: p.partition, lag: Math.max(0, Number(p.high) - from) };
          }),
        );
      };
      return withTimeout(read(), timeoutMs, 'kafka consumer lag');
    },

    async topicOffsets(topic, timeoutMs) {
      const read = async () => {
        await connectProbe();
        if (!(await probe.listTopics()).includes(topic)) return [];
        return partitionOffsets(probe, topic);
      };
      return withTimeout(read(), timeoutMs, `offsets of ${topic}`);
    },

    async topicExists(topic, timeoutMs) {
      const exists = async () => {
        await connectAdmin();
        return (await admin.listTopics()).includes(topic);
      };
      return withTimeout(exists(), timeoutMs, `kafka: looking for ${topic}`);
    },

    async close() {
      await Promise.allSettled([admin.disconnect(), probe.disconnect()]);
    },
  };
}

/** Managed topics: every one must exist with at least the partitions the service needs. */
async function checkManagedTopics(admin: Admin, topics: TopicSpec[], missing: TopicSpec[]): Promise<void> {
  const present = topics.filter((t) => !missing.includes(t));
  const metadata =
    present.length > 0 ? await admin.fetchTopicMetadata({ topics: present.map((t) => t.topic) }) : { topics: [] };
  const partitionsOf = new Map(metadata.topics.map((t) => [t.name, t.partitions.length]));
  const short = present.filter((t) => (partitionsOf.get(t.topic) ?? 0) < t.partitions);
  if (missing.length === 0 && short.length === 0) return;
  const parts = [
    ...missing.map((t) => `${t.topic} is missing (needs ${t.partitions} partitions)`),
    ...short.map((t) => `${t.topic} has ${partitionsOf.get(t.topic)} partitions, needs ${t.partitions}`),
  ];
  throw new TopicsNotReadyError(
    `KAFKA_MANAGE_TOPICS=false and the cluster's topics are not ready: ${parts.join('; ')}. ` +
      'Create them (or lower KAFKA_TOPIC_PARTITIONS), or let the service create them (KAFKA_MANAGE_TOPICS=true).',
  );
}
