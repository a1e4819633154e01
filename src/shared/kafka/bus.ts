// The one place that knows kafkajs. Everything else talks to MessageBus / ConsumerGroup,
// so the client library (unmaintained since 2023) can be swapped without touching callers.
import { Kafka, Partitioners, logLevel, type Admin, type Consumer, type Producer } from 'kafkajs';
import type { Logger } from '../logger.js';
import { withTimeout } from '../timeout.js';
import { isBrokerUnreachable, trackBrokerAvailability } from './availability.js';
import { kafkajsLogCreator } from './kafkajs-logging.js';

export type OutboundMessage = { key: string; value: string | Buffer; headers?: Record<string, string> };
export type InboundMessage = {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
};
export type TopicSpec = { topic: string; partitions: number; configs?: Record<string, string> };

export type BatchContext = {
  /** Throws PartitionsRevokedError when this member must give the batch up (rebalance, broker gone). */
  heartbeat(): Promise<void>;
  isStopping(): boolean;
};

/**
 * The group took this batch's partition away (a member joined or left, the coordinator moved) or
 * the broker stopped answering heartbeats: abandon the batch, uncommitted, so the group's next
 * owner applies it again (applies are idempotent). Never a verdict on the messages.
 */
export class PartitionsRevokedError extends Error {
  constructor(readonly reason: unknown) {
    super(`partition ownership lost: ${(reason as Error)?.message ?? String(reason)}`);
  }
}

/** Thrown by produce() while the broker is known unreachable, without waiting. */
export class BrokerUnavailableError extends Error {}

/** Handles one fetched batch of one partition; throwing means "not processed, fetch again". */
export type BatchHandler = (messages: InboundMessage[], ctx: BatchContext) => Promise<void>;

export interface ConsumerGroup {
  run(topics: string[], handler: BatchHandler): Promise<void>;
  /** Waits for the batch in hand, commits its offsets and leaves the group. */
  stop(): Promise<void>;
  onCrash(listener: (error: Error) => void): void;
}

export interface MessageBus {
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  /** Topics produce() makes sure exist (once, on first use) before sending. */
  declareTopics(topics: TopicSpec[]): void;
  /** Resolves only when every message is acknowledged by all in-sync replicas (acks=all). */
  produce(topic: string, messages: OutboundMessage[]): Promise<void>;
  /** False while the broker is known unreachable: produce() would fail at once. */
  available(): boolean;
  /** Throws when no broker answers within timeoutMs. */
  ping(timeoutMs: number): Promise<void>;
  consumerGroup(
    groupId: string,
    options?: { maxBytesPerPartition?: number; sessionTimeoutMs?: number; partitionsConcurrently?: number },
  ): ConsumerGroup;
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
};

/** Bytes of messages one producer.send carries at most (a single larger message goes alone). */
const maxSendBytes = 1024 * 1024;

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

function memoConnect(connect: () => Promise<void>): () => Promise<void> {
  let pending: Promise<void> | null = null;
  return () => {
    pending ??= connect().catch((err: unknown) => {
      pending = null; // let the next call try again
      throw err;
    });
    return pending;
  };
}

export function createKafkaBus({
  brokers,
  clientId,
  logger,
  onProduceError,
  produceTimeoutMs = 10_000,
  maxPendingBytes = 64 * 1024 * 1024,
  probeIntervalMs = 1000,
}: KafkaOptions): MessageBus {
  const log = logger.child({ component: 'kafka' });
  const kafka = new Kafka({ clientId, brokers, logLevel: logLevel.INFO, logCreator: kafkajsLogCreator(log) });
  // The health probe must fail fast, so it gets its own client without retries.
  const probeKafka = new Kafka({
    clientId: `${clientId}-probe`,
    brokers,
    connectionTimeout: 1000,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });

  // Durable producer: idempotent (needs acks=-1) with one request in flight, which kafkajs
  // needs to keep ordering and avoid the lost/reordered sends reported with more.
  const producer: Producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    // No retry option: kafkajs then retries an idempotent producer without limit, as EoS needs;
    // produce() bounds the wait instead (produceTimeoutMs), and the caller answers 503.
  });
  const admin: Admin = kafka.admin();
  const probe: Admin = probeKafka.admin();
  const connectProducer = memoConnect(() => producer.connect());
  const connectAdmin = memoConnect(() => admin.connect());
  const connectProbe = memoConnect(() => probe.connect());
  const consumers = new Set<Consumer>();
  const declared: TopicSpec[] = [];
  let pendingBytes = 0;
  let topicsReady: Promise<void> | null = null;
  const probeTimeoutMs = Math.min(2000, produceTimeoutMs);
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
          if (missing.length === 0) return;
          await admin.createTopics({
            waitForLeaders: true,
            topics: missing.map((t) => ({
              topic: t.topic,
              numPartitions: t.partitions,
              replicationFactor: -1, // the broker's default.replication.factor
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
        const send = Promise.all([connectProducer(), topicsReady]).then(async () => {
          for (const group of groupsOfBytes(messages, maxSendBytes)) {
            await producer.send({
              topic,
              acks: -1,
              messages: group.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
            });
          }
        });
        void send.then(
          () => (pendingBytes -= bytes),
          () => (pendingBytes -= bytes),
        );
        await withTimeout(send, produceTimeoutMs, `produce to ${topic}`);
      } catch (err) {
        onProduceError?.(topic);
        if (isBrokerUnreachable(err)) broker.markDown(err as Error);
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

    consumerGroup(groupId, options = {}) {
      // A kafkajs consumer that crashed for good is not reliably started again: each start
      // makes a fresh one (the group, its committed offsets and our handler stay the same).
      const makeConsumer = () => {
        const made = kafka.consumer({
          groupId,
          maxBytesPerPartition: options.maxBytesPerPartition ?? 8 * 1024 * 1024,
          maxBytes: 32 * 1024 * 1024,
          sessionTimeout: options.sessionTimeoutMs ?? 30_000,
          heartbeatInterval: Math.floor((options.sessionTimeoutMs ?? 30_000) / 10),
          allowAutoTopicCreation: false,
        });
        consumers.add(made);
        made.on(made.events.CRASH, (event) => onCrash(made, event.payload.error, event.payload.restart));
        return made;
      };
      let consumer: Consumer | undefined;
      let stopping = false;
      let start: (() => Promise<void>) | null = null;
      let crashListener: (error: Error) => void = () => undefined;
      // kafkajs gives a consumer up for good on some errors of a broker that is away (e.g. "Failed
      // to find group coordinator" while it restarts). That is no reason for the process to die:
      // start the consumer again, with backoff, until the broker answers. Other crashes go to the
      // listener (the runner exits, and its supervisor restarts it).
      let restarts = 0;
      const restartLater = () => {
        const delayMs = Math.min(30_000, 500 * 2 ** Math.min(restarts++, 6));
        setTimeout(() => {
          if (stopping || !start) return;
          const crashed = consumer!;
          consumers.delete(crashed);
          crashed
            .disconnect()
            .catch(() => undefined)
            .then(() => start!())
            .then(
              () => (restarts = 0),
              (err: unknown) => {
                log.warn({ err, groupId }, 'consumer could not start again yet; retrying');
                restartLater();
              },
            );
        }, delayMs).unref();
      };
      function onCrash(crashed: Consumer, error: Error, kafkajsRestarts: boolean): void {
        if (kafkajsRestarts || stopping || crashed !== consumer) return;
        if (isBrokerUnreachable(error)) {
          log.warn({ err: error, groupId }, 'consumer stopped while the broker is away; starting it again');
          restartLater();
        } else {
          crashListener(error);
        }
      }
      return {
        async run(topics, handler) {
          start = async () => {
            consumer = makeConsumer();
            await consumer.connect();
            await consumer.subscribe({ topics, fromBeginning: true });
            await runConsumer(consumer);
          };
          const runConsumer = (fresh: Consumer) =>
            fresh.run({
              // Batches of different partitions are applied side by side (each still in order).
              partitionsConsumedConcurrently: options.partitionsConcurrently ?? 1,
              autoCommit: true,
              eachBatchAutoResolve: false,
              eachBatch: async ({ batch, heartbeat, resolveOffset, commitOffsetsIfNecessary, isRunning, isStale }) => {
                if (!isRunning() || isStale() || batch.messages.length === 0) return;
                const messages: InboundMessage[] = batch.messages.map((m) => ({
                  topic: batch.topic,
                  partition: batch.partition,
                  offset: m.offset,
                  key: m.key ? m.key.toString() : null,
                  value: m.value,
                  headers: Object.fromEntries(
                    Object.entries(m.headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? String(v[0]) : String(v)]),
                  ),
                }));
                try {
                  await handler(messages, {
                    heartbeat: () =>
                      heartbeat().catch((err: unknown) => {
                        throw new PartitionsRevokedError(err);
                      }),
                    isStopping: () => stopping || !isRunning(),
                  });
                } catch (err) {
                  if (!(err instanceof PartitionsRevokedError)) throw err;
                  // Stopping: leave the batch unresolved (uncommitted) and let disconnect go on.
                  if (stopping || !isRunning()) return;
                  // kafkajs rejoins the group on its own rebalance errors: hand it the original.
                  throw err.reason;
                }
                resolveOffset(batch.lastOffset());
                await commitOffsetsIfNecessary();
              },
            });
          await start();
        },
        async stop() {
          stopping = true;
          if (!consumer) return;
          await consumer.disconnect(); // waits for the running batch, then commits
          consumers.delete(consumer);
        },
        onCrash(listener) {
          crashListener = listener;
        },
      };
    },

    async close() {
      broker.close();
      await Promise.allSettled([...consumers].map((c) => c.disconnect()));
      await Promise.allSettled([producer.disconnect(), admin.disconnect(), probe.disconnect()]);
    },
  };
  return bus;
}
