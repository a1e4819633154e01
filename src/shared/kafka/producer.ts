// The bus's one produce path: small sends through the serial producer on the event loop, large
// ones through the producer thread, both bounded by the produce timeout and the pending-bytes cap,
// and both telling the broker's availability what they saw.
import type { Kafka } from 'kafkajs';
import type { Logger } from '../logger.js';
import { TimeoutError, withTimeout } from '../timeout.js';
import { injectInto } from '../tracing/context.js';
import { isBrokerUnreachable, trackBrokerAvailability } from './availability.js';
import type { KafkaSecurity } from './client-security.js';
import { BrokerUnavailableError, type OutboundMessage } from './message-bus.js';
import { partitionCounts } from './partitions.js';
import { createThreadedProducer } from './producer-thread.js';
import { createSerialProducer, durableProducer } from './serial-producer.js';
import type { TopicAdmin } from './topic-admin.js';

/** Bytes of messages one producer.send carries at most (a single larger message goes alone). */
const maxSendBytes = 1024 * 1024;

/**
 * produce() calls of at least this many bytes go through the producer thread (producer-thread.ts):
 * encoding them would block the event loop, and small writes need not queue behind them.
 */
const threadedFromBytes = 64 * 1024;

export type ProducerOptions = {
  kafka: Kafka;
  brokers: string[];
  clientId: string;
  security: KafkaSecurity;
  topicAdmin: TopicAdmin;
  /** Resolves once the declared topics exist (made once, again after a failure). */
  topicsReady(): Promise<void>;
  produceTimeoutMs: number;
  maxPendingBytes: number;
  probeIntervalMs: number;
  onProduceError?: (topic: string) => void;
  log: Logger;
};

export type Producer = {
  produce(topic: string, messages: OutboundMessage[]): Promise<void>;
  available(): boolean;
  close(): Promise<void>;
};

export function createProducer(o: ProducerOptions): Producer {
  const { log, produceTimeoutMs, onProduceError } = o;
  // Durable, used one send at a time per partition (serial-producer.ts says why).
  const serial = createSerialProducer(
    () => durableProducer(o.kafka),
    partitionCounts(() => o.topicAdmin.connected()),
    (err) => log.warn({ err }, 'kafka producer replaced after a send it gave up on'),
  );
  const threaded = createThreadedProducer({
    brokers: o.brokers,
    clientId: `${o.clientId}-bulk`,
    security: o.security,
    log,
  });
  const probeTimeoutMs = Math.max(1000, Math.min(2000, produceTimeoutMs)); // its connect takes up to 1 s
  const broker = trackBrokerAvailability({
    probe: () => o.topicAdmin.probe(probeTimeoutMs, 'kafka probe'),
    probeIntervalMs: o.probeIntervalMs,
    onChange: (up, reason) =>
      up
        ? log.info('kafka reachable again: writes accepted')
        : log.warn({ err: reason }, 'kafka unreachable: writes answer 503 at once until a probe succeeds'),
  });
  let pendingBytes = 0;

  const sendAll = async (topic: string, messages: OutboundMessage[], bytes: number) => {
    await o.topicsReady();
    const deadline = Date.now() + produceTimeoutMs; // a group still queued then is never sent
    // kafkajs puts all messages of one partition into ONE record batch, which the broker refuses
    // beyond max.message.bytes: send in groups of at most maxSendBytes, one by one.
    for (const group of groupsOfBytes(messages, maxSendBytes)) {
      const traced = group.map((m) => ({ key: m.key, value: m.value, headers: injectInto(m.headers) }));
      if (bytes >= threadedFromBytes) await threaded.send(topic, traced, deadline);
      else await serial.send({ topic, acks: -1, messages: traced }, deadline);
    }
  };

  return {
    available: () => broker.available(),

    async produce(topic, messages) {
      if (!broker.available()) {
        onProduceError?.(topic);
        throw new BrokerUnavailableError(`produce to ${topic} refused: the broker is unreachable`);
      }
      const bytes = messages.reduce((n, m) => n + Buffer.byteLength(m.value) + m.key.length, 0);
      if (pendingBytes > 0 && pendingBytes + bytes > o.maxPendingBytes) {
        onProduceError?.(topic);
        throw new Error(`produce to ${topic} refused: ${pendingBytes} bytes of earlier sends still pending`);
      }
      pendingBytes += bytes;
      try {
        const send = sendAll(topic, messages, bytes);
        void send.then(
          () => (pendingBytes -= bytes),
          () => (pendingBytes -= bytes),
        );
        await withTimeout(send, produceTimeoutMs, `produce to ${topic}`);
      } catch (err) {
        onProduceError?.(topic);
        if (err instanceof TimeoutError) broker.suspect(err);
        else if (isBrokerUnreachable(err)) broker.markDown(err as Error);
        throw err;
      }
    },

    async close() {
      broker.close();
      await Promise.allSettled([serial.close(), threaded.close()]);
    },
  };
}

function groupsOfBytes(messages: OutboundMessage[], maxBytes: number): OutboundMessage[][] {
  const groups: OutboundMessage[][] = [];
  let current: OutboundMessage[] = [];
  let size = 0;
  for (const m of messages) {
    const bytes = Buffer.byteLength(m.value) + m.key.length;
    if (current.length > 0 && size + bytes > maxBytes) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(m);
    size += bytes;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
