// A kafkajs idempotent producer used one send at a time per partition.
//
// Why: when a produce request fails with an unknown outcome (the connection closed after the
// broker appended the batch but before its answer arrived), kafkajs takes the partition's
// sequence numbers back and hands them to whichever request takes the broker next. If that is
// another send() to the same partition than the failed one, the broker takes it for a duplicate
// of the batch it already holds, acknowledges it and drops it: an acknowledged message that is not
// in Kafka (test/faults/kafka-lost-ack.test.ts). Sent one at a time per partition, the request
// retried with those numbers is the failed one itself, which the broker rightly answers as a
// duplicate. Sequence numbers are per partition, so sends to other partitions need not wait: a
// send stuck on a dead leader holds only its own partition's queue (issue 29).
//
// A send kafkajs gives up on (a non-retriable error) leaves the producer's numbers in doubt, so
// the producer is replaced: a new producer id starts its sequences afresh. The old one is
// disconnected once the sends it still carries (to other partitions) have settled.
//
// A send still queued when its deadline passes is never made: its caller has been answered.
import type { Kafka, Message, Producer, ProducerRecord } from 'kafkajs';
import { Partitioners } from './kafkajs.js';
import { memoConnect } from './memo-connect.js';
import { partitionOf } from './partitions.js';

/**
 * The service's durable kafkajs producer: idempotent (needs acks=-1) with one request in flight,
 * which kafkajs needs to keep ordering and avoid the lost/reordered sends reported with more. No
 * retry option: kafkajs then retries an idempotent producer without limit, as EoS needs; callers
 * bound their wait instead (the produce timeout) and answer 503.
 */
export const durableProducer = (kafka: Kafka): Producer =>
  kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });

export class SendExpiredError extends Error {
  constructor(what: string) {
    super(`${what} timed out before it was sent (earlier sends still in progress)`);
  }
}

export type SerialProducer = {
  /**
   * Resolves once every message of the record is acknowledged. Each partition's part waits for
   * the sends to that partition queued before it; a part still waiting at deadline (epoch ms) is
   * not sent and the call rejects with SendExpiredError. A send already made is not cancelled
   * (its caller bounds its own wait).
   */
  send(record: ProducerRecord, deadline: number): Promise<void>;
  /** Sends (per partition) in progress or queued. */
  queued(): number;
  close(): Promise<void>;
};

type Queued = {
  record: ProducerRecord;
  deadline: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
  expired: boolean;
};

/** A record per partition its messages go to, each message's partition set. */
function splitByPartition(record: ProducerRecord, count: number): ProducerRecord[] {
  const parts = new Map<number, Message[]>();
  for (const m of record.messages) {
    const partition = partitionOf(record.topic, m, count);
    const list = parts.get(partition) ?? [];
    list.push({ ...m, partition });
    parts.set(partition, list);
  }
  return [...parts.values()].map((messages) => ({ ...record, messages }));
}

export function createSerialProducer(
  newProducer: () => Producer,
  /** The topic's partition count (partitions.ts: cached, never waits once known). */
  partitionCount: (topic: string) => Promise<number>,
  onReplaced?: (reason: unknown) => void,
): SerialProducer {
  let producer = newProducer();
  let connect = memoConnect(() => producer.connect()); // made anew for each producer
  let closed = false;
  const inFlight = new Map<Producer, number>([[producer, 0]]);
  const queues = new Map<string, Queued[]>(); // topic/partition → sends waiting
  const busy = new Set<string>(); // topic/partition with a send in progress

  const disconnectIfIdle = (p: Producer) => {
    if (p === producer || (inFlight.get(p) ?? 0) > 0) return;
    inFlight.delete(p);
    void p.disconnect().catch(() => undefined);
  };

  const replace = (reason: unknown) => {
    const old = producer;
    producer = newProducer();
    inFlight.set(producer, 0);
    connect = memoConnect(() => producer.connect());
    disconnectIfIdle(old);
    onReplaced?.(reason);
  };

  const sendWith = async (record: ProducerRecord) => {
    await connect();
    const sending = producer;
    inFlight.set(sending, (inFlight.get(sending) ?? 0) + 1);
    try {
      await sending.send(record);
    } catch (err) {
      if (sending === producer && !closed) replace(err);
      throw err;
    } finally {
      inFlight.set(sending, inFlight.get(sending)! - 1);
      disconnectIfIdle(sending);
    }
  };

  const pump = async (key: string) => {
    if (busy.has(key)) return;
    busy.add(key);
    const queue = queues.get(key)!;
    try {
      for (let next = queue.shift(); next; next = queue.shift()) {
        if (next.expired) continue;
        clearTimeout(next.timer);
        if (Date.now() >= next.deadline) {
          next.reject(new SendExpiredError(`produce to ${next.record.topic}`));
          continue;
        }
        await sendWith(next.record).then(next.resolve, next.reject);
      }
    } finally {
      busy.delete(key);
      if (queue.length === 0) queues.delete(key);
    }
  };

  const enqueue = (record: ProducerRecord, deadline: number) =>
    new Promise<void>((resolve, reject) => {
      const key = `${record.topic}/${record.messages[0]!.partition}`;
      const item: Queued = {
        record,
        deadline,
        resolve,
        reject,
        expired: false,
        timer: setTimeout(
          () => {
            item.expired = true;
            reject(new SendExpiredError(`produce to ${record.topic}`));
          },
          Math.max(0, deadline - Date.now()),
        ),
      };
      item.timer.unref();
      const queue = queues.get(key) ?? [];
      queues.set(key, queue);
      queue.push(item);
      void pump(key);
    });

  const closedError = (topic: string) => new Error(`producer closed: ${topic} not sent`);

  return {
    async send(record, deadline) {
      if (closed) throw closedError(record.topic);
      const count = await partitionCount(record.topic);
      if (closed) throw closedError(record.topic);
      const parts = splitByPartition(record, count).map((part) => enqueue(part, deadline));
      // Every part settles (none is left unobserved); the first failure is the call's.
      const settled = await Promise.allSettled(parts);
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
    },
    queued: () => [...queues.values()].reduce((n, q) => n + q.length, 0) + busy.size,
    async close() {
      closed = true;
      for (const queue of queues.values()) {
        for (const item of queue.splice(0)) {
          clearTimeout(item.timer);
          item.reject(closedError(item.record.topic));
        }
      }
      await Promise.allSettled([...inFlight.keys()].map((p) => p.disconnect()));
    },
  };
}
