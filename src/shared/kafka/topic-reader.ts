import { randomUUID } from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import { withTimeout } from '../timeout.js';
import type { InboundMessage } from './consumer-group.js';

/** A message as it is stored in its topic, with the time the broker took it. */
export type StoredMessage = InboundMessage & { timestamp: Date };

/** A partition's first retained offset (low) and the offset its next message gets (high). */
export type PartitionOffsets = { partition: number; low: number; high: number };

export async function partitionOffsets(admin: Admin, topic: string): Promise<PartitionOffsets[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets
    .map((p) => ({ partition: p.partition, low: Number(p.low), high: Number(p.high) }))
    .sort((a, b) => a.partition - b.partition);
}

/**
 * Every message a topic holds now (each partition from its low to its high watermark as they are
 * when the call starts), in partition and offset order. kafkajs reads only through a consumer
 * group, so this joins a group of its own, commits nothing, and deletes the group afterwards.
 * Meant for small topics (dead letters): everything read is held in memory.
 */
export async function readWholeTopic(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  timeoutMs: number,
): Promise<StoredMessage[]> {
  const ends = new Map(
    (await partitionOffsets(admin, topic)).filter((p) => p.high > p.low).map((p) => [p.partition, p.high]),
  );
  if (ends.size === 0) return [];
  const groupId = `connect-topic-reader-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  const read: StoredMessage[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const complete = new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.CRASH, (event) => reject(event.payload.error));
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const end = ends.get(batch.partition);
            if (end === undefined) return;
            for (const m of batch.messages) {
              if (Number(m.offset) >= end) break;
              read.push({
                topic,
                partition: batch.partition,
                offset: m.offset,
                key: m.key?.toString('utf8') ?? null,
                value: m.value,
                headers: Object.fromEntries(
                  Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(Array.isArray(v) ? v[0] : v)]),
                ),
                timestamp: new Date(Number(m.timestamp)),
              });
            }
            const last = batch.messages.at(-1);
            if (last && Number(last.offset) + 1 >= end) ends.delete(batch.partition);
            if (ends.size === 0) resolve();
          },
        })
        .catch(reject);
    });
    await withTimeout(complete, timeoutMs, `reading ${topic}`);
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
  return read.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}
