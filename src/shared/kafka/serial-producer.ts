// A kafkajs idempotent producer used one send at a time.
//
// Why: when a produce request fails with an unknown outcome (the connection closed after the
// broker appended the batch but before its answer arrived), kafkajs takes the partition's
// sequence numbers back and hands them to whichever request takes the broker next. If that is
// another send() than the failed one, the broker takes it for a duplicate of the batch it already
// holds, acknowledges it and drops it: an acknowledged message that is not in Kafka
// (test/faults/kafka-lost-ack.test.ts). Sent one at a time, the request retried with those
// numbers is the failed one itself, which the broker rightly answers as a duplicate.
//
// A send kafkajs gives up on (a non-retriable error) leaves the producer's numbers in doubt, so
// the producer is replaced: a new producer id starts its sequences afresh.
//
// A send still queued when its deadline passes is never made: its caller has been answered.
import { Partitioners, type Kafka, type Producer, type ProducerRecord } from 'kafkajs';

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
   * Resolves once the record is acknowledged. Rejects with SendExpiredError, without sending,
   * if the sends queued before it are still in progress at deadline (epoch ms); a send already
   * made is not cancelled (its caller bounds its own wait).
   */
  send(record: ProducerRecord, deadline: number): Promise<void>;
  /** Sends in progress or queued. */
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

export function createSerialProducer(
  newProducer: () => Producer,
  onReplaced?: (reason: unknown) => void,
): SerialProducer {
  let producer = newProducer();
  let connected: Promise<void> | null = null;
  let busy = false;
  let closed = false;
  const queue: Queued[] = [];

  const connect = () =>
    (connected ??= producer.connect().catch((err: unknown) => {
      connected = null; // the next send tries again
      throw err;
    }));

  const replace = (reason: unknown) => {
    const old = producer;
    producer = newProducer();
    connected = null;
    void old.disconnect().catch(() => undefined);
    onReplaced?.(reason);
  };

  const pump = async () => {
    if (busy) return;
    busy = true;
    try {
      for (let next = queue.shift(); next; next = queue.shift()) {
        if (next.expired) continue;
        clearTimeout(next.timer);
        if (Date.now() >= next.deadline) {
          next.reject(new SendExpiredError(`produce to ${next.record.topic}`));
          continue;
        }
        try {
          await connect();
          const sending = producer;
          try {
            await sending.send(next.record);
          } catch (err) {
            if (sending === producer && !closed) replace(err);
            throw err;
          }
          next.resolve();
        } catch (err) {
          next.reject(err);
        }
      }
    } finally {
      busy = false;
    }
  };

  return {
    send(record, deadline) {
      if (closed) return Promise.reject(new Error(`producer closed: ${record.topic} not sent`));
      return new Promise<void>((resolve, reject) => {
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
        queue.push(item);
        void pump();
      });
    },
    queued: () => queue.length + (busy ? 1 : 0),
    async close() {
      closed = true;
      for (const item of queue.splice(0)) {
        clearTimeout(item.timer);
        item.reject(new Error(`producer closed: ${item.record.topic} not sent`));
      }
      await producer.disconnect().catch(() => undefined);
    },
  };
}
