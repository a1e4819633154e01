// Broker housekeeping of bench/inbound.ts (kafkajs admin, the library the service uses).
import { Kafka, logLevel } from 'kafkajs';

const admin = async <T>(brokers: string[], fn: (a: ReturnType<Kafka['admin']>) => Promise<T>): Promise<T> => {
  const a = new Kafka({ clientId: 'bench-inbound-admin', brokers, logLevel: logLevel.NOTHING }).admin();
  await a.connect();
  try {
    return await fn(a);
  } finally {
    await a.disconnect();
  }
};

/** Messages in a topic (sum over partitions of high − low watermark). */
export const topicMessageCount = (brokers: string[], topic: string) =>
  admin(brokers, async (a) =>
    (await a.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high) - Number(p.low), 0),
  );

/**
 * Commits the consumer group's offsets at the topic's end (the group must have no members), so
 * the workers skip what is in the topic now: phase A0's messages name no import job.
 */
export const moveGroupToEnd = (brokers: string[], groupId: string, topic: string) =>
  admin(brokers, async (a) => {
    const ends = await a.fetchTopicOffsets(topic);
    await a.setOffsets({ groupId, topic, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) });
    return ends.reduce((n, p) => n + Number(p.high), 0);
  });

/** Deletes this run's topics and consumer groups (everything named with the run's prefix). */
export const deleteRunArtifacts = (brokers: string[], prefix: string) =>
  admin(brokers, async (a) => {
    const topics = (await a.listTopics()).filter((t) => t.startsWith(prefix));
    const groups = (await a.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    if (groups.length > 0) await a.deleteGroups(groups).catch(() => undefined);
    if (topics.length > 0) await a.deleteTopics({ topics, timeout: 30_000 });
    return { topics, groups };
  });
