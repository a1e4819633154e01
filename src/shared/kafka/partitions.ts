// Which partition a message goes to, computed before it is sent, so the serial producer can keep
// one queue per partition (serial-producer.ts says why): kafkajs's default partitioner (murmur2
// of the key over the topic's partition count, as the Java client), fed the topic's actual count.
import type { Admin, Message, PartitionMetadata } from 'kafkajs';
import { Partitioners } from './kafkajs.js';

const defaultPartitioner = Partitioners.DefaultPartitioner();

/** The partition kafkajs would choose for message in a topic of `count` partitions. */
export function partitionOf(topic: string, message: Message, count: number): number {
  const partitionMetadata = Array.from({ length: count }, (_, partitionId): PartitionMetadata => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [],
    isr: [],
  }));
  return defaultPartitioner({ topic, partitionMetadata, message });
}

/**
 * Partition counts of topics, read from the cluster once and then served from memory: a send never
 * waits for metadata again, even while a broker is away. Refreshed in the background every
 * refreshMs, so partitions an operator adds are used within that time.
 */
export function partitionCounts(admin: () => Promise<Admin>, refreshMs = 60_000) {
  const known = new Map<string, { count: number; readAt: number }>();
  const reading = new Map<string, Promise<number>>();

  const read = (topic: string): Promise<number> => {
    let pending = reading.get(topic);
    if (!pending) {
      pending = admin()
        .then((a) => a.fetchTopicMetadata({ topics: [topic] }))
        .then(({ topics }) => {
          const count = topics.find((t) => t.name === topic)?.partitions.length ?? 0;
          if (count <= 0) throw new Error(`topic ${topic} has no partitions in the cluster's metadata`);
          known.set(topic, { count, readAt: Date.now() });
          return count;
        })
        .finally(() => reading.delete(topic));
      reading.set(topic, pending);
    }
    return pending;
  };

  return async (topic: string): Promise<number> => {
    const cached = known.get(topic);
    if (!cached) return read(topic);
    if (Date.now() - cached.readAt >= refreshMs) void read(topic).catch(() => undefined); // stale meanwhile
    return cached.count;
  };
}
