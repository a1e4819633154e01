// The one place that knows kafkajs. Everything else talks to MessageBus / ConsumerGroup,
// so the client library (unmaintained since 2023) can be swapped without touching callers.
import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import type { Logger } from '../logger.js';
import { withTimeout } from '../timeout.js';
import { isBrokerUnreachable, isSendTimeout, trackBrokerAvailability } from './availability.js';
import { createConsumerGroup, type ConsumerGroup, type ConsumerGroupOptions } from './consumer-group.js';
export { type PartitionOffsets, type StoredMessage } from './topic-reader.js';
import { kafkajsLogCreator } from './kafkajs-logging.js';
import { createThreadedProducer } from './producer-thread.js';
import { memoConnect } from './memo-connect.js';
import { partitionCounts } from './partitions.js';
import { createSerialProducer, durableProducer } from './serial-producer.js';
import { partitionOffsets, readWholeTopic, type PartitionOffsets, type StoredMessage } from './topic-reader.js';
import { injectInto } from '../tracing/context.js';
import {
  accessDeniedReason,
  KafkaAccessDeniedError,
  kafkaClientOptions,
  plaintext,
  type KafkaSecurity,
} from './client-security.js';

export {
  type ConsumerGroup,
  type ConsumerGroupOptions,
  type Feed,
  type InboundMessage,
  type PartitionOffset,
} from './consumer-group.js';

export type OutboundMessage = { key: string; value: string | Buffer; headers?: Record<string, string> };
export type TopicSpec = {
  topic: string;
  partitions: number;
  /** -1 or absent: the broker's default.replication.factor. */
  replicationFactor?: number;
  configs?: Record<string, string>;
};

/** Topics the service may not create are missing or have fewer partitions than it needs. */
export class TopicsNotReadyError extends Error {}

/** Messages of one partition that a consumer group has not committed yet. */
export type PartitionLag = { topic: string; partition: number; lag: number };

/** Thrown by produce() while the broker is known unreachable, without waiting. */
export class BrokerUnavailableError extends Error {}

export interface MessageBus {
  /** Creates the missing topics, or (manageTopics false) checks that they exist: TopicsNotReadyError. */
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  /**
   * At start: reaches the cluster and ensures the declared topics, within timeoutMs. Throws
   * KafkaAccessDeniedError (credentials or certificates refused) and TopicsNotReadyError, which
   * no retry can mend; resolves false when no broker answered in time (the caller goes on and
   * waits for it as for any outage), true when all is well.
   */
  checkAtStart(timeoutMs: number): Promise<boolean>;
  /** Topics produce() makes sure exist (once, on first use) before sending. */
  declareTopics(topics: TopicSpec[]): void;
  /**
   * Resolves only when every message is acknowledged by all in-sync replicas (acks=all). Large
   * calls go through the producer thread, which takes over Buffer values that own their memory:
   * do not read a message's value after the call.
   */
  produce(topic: string, messages: OutboundMessage[]): Promise<void>;
  /** False while the broker is known unreachable: produce() would fail at once. */
  available(): boolean;
  /** Throws when no broker answers within timeoutMs. */
  ping(timeoutMs: number): Promise<void>;
  /**
   * Per partition of topics: end offset minus the group's committed offset (a partition the group
   * has committed nothing for counts from its first retained offset, as the group starts from the
   * beginning). Throws when the broker does not answer within timeoutMs.
   */
  consumerLag(groupId: string, topics: string[], timeoutMs: number): Promise<PartitionLag[]>;
  /** Each partition's low and high watermark ([] when the topic does not exist); fails after timeoutMs. */
  topicOffsets(topic: string, timeoutMs: number): Promise<PartitionOffsets[]>;
  /** Every message the topic holds now, in partition and offset order ([] when it does not exist). */
  readTopic(topic: string, timeoutMs: number): Promise<StoredMessage[]>;
  consumerGroup(groupId: string, options?: ConsumerGroupOptions): ConsumerGroup;
  close(): Promise<void>;
}

export type KafkaOptions = {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** How long produce() waits for acknowledgement before it fails. */
  produceTimeoutMs?: number;
  /**
   * Bytes of sends not yet settled. A timed-out send keeps retrying inside kafkajs (it cannot be
   * cancelled), so without this bound a slow Kafka plus retrying clients would grow memory
   * without limit; beyond it produce() fails at once.
   */
  maxPendingBytes?: number;
  /** Called once per failed produce call (metrics). */
  onProduceError?: (topic: string) => void;
  /** How often a broker known down is probed for its return. */
  probeIntervalMs?: number;
  /** TLS and SASL towards the brokers (default: plaintext). */
  security?: KafkaSecurity;
  /** False: never create topics, only check that they exist with enough partitions. */
  manageTopics?: boolean;
};

/** Bytes of messages one producer.send carries at most (a single larger message goes alone). */
const maxSendBytes = 1024 * 1024;

/**
 * produce() calls of at least this many bytes go through the producer thread (producer-thread.ts):
 * encoding them would block the event loop, and small writes need not queue behind them.
 */
const threadedFromBytes = 64 * 1024;

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

export function createKafkaBus({
  brokers,
  clientId,
  logger,
  onProduceError,
  produceTimeoutMs = 10_000,
  maxPendingBytes = 64 * 1024 * 1024,
  probeIntervalMs = 1000,
  security = plaintext,
  manageTopics = true,
}: KafkaOptions): MessageBus {
  const log = logger.child({ component: 'kafka' });
  const secured = kafkaClientOptions(security);
  const kafka = new Kafka({
    clientId,
    brokers,
    ...secured,
    logLevel: logLevel.INFO,
    logCreator: kafkajsLogCreator(log),
  });
  // The health probe must fail fast, so it gets its own client without retries.
  const probeKafka = new Kafka({
    clientId: `${clientId}-probe`,
    brokers,
    ...secured,
    connectionTimeout: 1000,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });

  const admin: Admin = kafka.admin();
  const probe: Admin = probeKafka.admin();
  const connectAdmin = memoConnect(() => admin.connect());
  // Durable, used one send at a time per partition (serial-producer.ts says why).
  const producer = createSerialProducer(
    () => durableProducer(kafka),
    partitionCounts(() => connectAdmin().then(() => admin)),
    (err) => log.warn({ err }, 'kafka producer replaced after a send it gave up on'),
  );
  const bulkProducer = createThreadedProducer({ brokers, clientId: `${clientId}-bulk`, security, log });
  const connectProbe = memoConnect(() => probe.connect());
  const consumers = new Set<Consumer>();
  const declared: TopicSpec[] = [];
  let pendingBytes = 0;
  let topicsReady: Promise<void> | null = null;
  const probeTimeoutMs = Math.max(1000, Math.min(2000, produceTimeoutMs)); // its connect takes up to 1 s
  const broker = trackBrokerAvailability({
    probe: () =>
      withTimeout(
        connectProbe().then(() => probe.describeCluster()),
        probeTimeoutMs,
        'kafka probe',
      ).then(() => undefined),
    probeIntervalMs,
    onChange: (up, reason) =>
      up
        ? log.info('kafka reachable again: writes accepted')
        : log.warn({ err: reason }, 'kafka unreachable: writes answer 503 at once until a probe succeeds'),
  });

  const bus: MessageBus = {
    declareTopics(topics) {
      declared.push(...topics);
      topicsReady = null;
    },

    async ensureTopics(topics) {
      await connectAdmin();
      // A broker that has just started (or just created other topics) can answer "does not
      // host this topic-partition" while leaders are elected: retriable, so retry a while.
      for (let attempt = 1; ; attempt++) {
        try {
          const existing = new Set(await admin.listTopics());
          const missing = topics.filter((t) => !existing.has(t.topic));
          if (!manageTopics) return await checkManagedTopics(admin, topics, missing);
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
        } catch (err) {
          if (!(err as { retriable?: boolean }).retriable || attempt >= 10) throw err;
          log.warn({ err, attempt }, 'creating topics failed; retrying');
          await new Promise((r) => setTimeout(r, 500 * attempt));
        }
      }
    },

    available: () => broker.available(),

    async checkAtStart(timeoutMs) {
      try {
        // First through the probe's client: without retries, refused access fails at once and
        // with its cause (the main client would retry for seconds and hide it behind a timeout).
        await withTimeout(
          connectProbe().then(() => probe.describeCluster()),
          timeoutMs,
          'kafka start check',
        );
        await withTimeout(bus.ensureTopics(declared), timeoutMs, 'kafka topics check');
        return true;
      } catch (err) {
        if (err instanceof TopicsNotReadyError) throw err;
        const denied = accessDeniedReason(err);
        if (denied) throw new KafkaAccessDeniedError(`Kafka (${brokers.join(',')}) refused this process: ${denied}`);
        log.warn({ err }, 'kafka did not answer at start; going on without it until it does');
        return false;
      }
    },

    async produce(topic, messages) {
      if (!broker.available()) {
        onProduceError?.(topic);
        throw new BrokerUnavailableError(`produce to ${topic} refused: the broker is unreachable`);
      }
      const bytes = messages.reduce((n, m) => n + Buffer.byteLength(m.value) + m.key.length, 0);
      if (pendingBytes > 0 && pendingBytes + bytes > maxPendingBytes) {
        onProduceError?.(topic);
        throw new Error(`produce to ${topic} refused: ${pendingBytes} bytes of earlier sends still pending`);
      }
      pendingBytes += bytes;
      try {
        topicsReady ??= bus.ensureTopics(declared).catch((err: unknown) => {
          topicsReady = null;
          throw err;
        });
        // kafkajs puts all messages of one partition into ONE record batch, which the broker
        // refuses beyond max.message.bytes: send in groups of at most maxSendBytes, one by one.
        const threaded = bytes >= threadedFromBytes;
        const deadline = Date.now() + produceTimeoutMs; // a group still queued then is never sent
        const send = topicsReady.then(async () => {
          for (const group of groupsOfBytes(messages, maxSendBytes)) {
            if (threaded)
              await bulkProducer.send(
                topic,
                group.map((m) => ({ ...m, headers: injectInto(m.headers) })),
                deadline,
              );
            else
              await producer.send(
                {
                  topic,
                  acks: -1,
                  messages: group.map((m) => ({ key: m.key, value: m.value, headers: injectInto(m.headers) })),
                },
                deadline,
              );
          }
        });
        void send.then(
          () => (pendingBytes -= bytes),
          () => (pendingBytes -= bytes),
        );
        await withTimeout(send, produceTimeoutMs, `produce to ${topic}`);
      } catch (err) {
        onProduceError?.(topic);
        if (isSendTimeout(err)) broker.suspect(err as Error);
        else if (isBrokerUnreachable(err)) broker.markDown(err as Error);
        throw err;
      }
    },

    async ping(timeoutMs) {
      await withTimeout(
        connectProbe().then(() => probe.describeCluster()),
        timeoutMs,
        'kafka ping',
      );
    },

    // Through the probe's client (no retries): a scrape while the broker is away fails fast
    // instead of leaving retrying requests behind.
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

    // Through the probe's client, as consumerLag (metrics read it at scrape time).
    async topicOffsets(topic, timeoutMs) {
      const read = async () => {
        await connectProbe();
        if (!(await probe.listTopics()).includes(topic)) return [];
        return partitionOffsets(probe, topic);
      };
      return withTimeout(read(), timeoutMs, `offsets of ${topic}`);
    },

    async readTopic(topic, timeoutMs) {
      const exists = async () => {
        await connectAdmin();
        return (await admin.listTopics()).includes(topic);
      };
      if (!(await withTimeout(exists(), timeoutMs, `kafka: looking for ${topic}`))) return [];
      return readWholeTopic(kafka, admin, topic, timeoutMs);
    },

    consumerGroup(groupId, options = {}) {
      return createConsumerGroup({
        groupId,
        log,
        options,
        newConsumer: () => {
          const made = kafka.consumer({
            groupId,
            // Small fetches: decoding one holds the worker's event loop (and so the express lane's
            // applies), and the fair queue needs no more than a chunk or two per partition at a time.
            maxBytesPerPartition: options.maxBytesPerPartition ?? 1024 * 1024,
            maxBytes: 8 * 1024 * 1024,
            sessionTimeout: options.sessionTimeoutMs ?? 30_000,
            heartbeatInterval: Math.floor((options.sessionTimeoutMs ?? 30_000) / 10),
            // With every partition paused (the worker's buffer full) kafkajs sleeps this long before
            // it looks again; the default 5 s left a worker idle for seconds after it resumed.
            maxWaitTimeInMs: 250,
            allowAutoTopicCreation: false,
            // kafkajs's default waits grow to 9.6 s between attempts (joining, fetching): attempts
            // every 2 s at most find a new coordinator or leader soon after a broker's loss, with
            // about the same patience in all (~16 s) before a crash (consumer-group.ts takes over).
            retry: { initialRetryTime: 300, maxRetryTime: 2000, retries: 10 },
          });
          consumers.add(made);
          return made;
        },
        discarded: (consumer) => consumers.delete(consumer),
      });
    },

    async close() {
      broker.close();
      await Promise.allSettled([...consumers].map((c) => c.disconnect()));
      await Promise.allSettled([producer.close(), bulkProducer.close(), admin.disconnect(), probe.disconnect()]);
    },
  };
  return bus;
}
