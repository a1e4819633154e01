// The one place that composes kafkajs: its clients, the produce path (producer.ts), the admin side
// (topic-admin.ts) and consumer groups (consumer-group.ts). Everything else talks to MessageBus
// (message-bus.ts), so the client library (unmaintained since 2023) can be swapped behind it.
import type { Consumer } from 'kafkajs';
import { Kafka, logLevel } from './kafkajs.js';
import { kafkajsRetry, schedules } from '../retry.js';
import { withTimeout } from '../timeout.js';
import { accessDeniedReason, KafkaAccessDeniedError, kafkaClientOptions, plaintext } from './client-security.js';
import { createConsumerGroup } from './consumer-group.js';
import { kafkajsLogCreator } from './kafkajs-logging.js';
import { TopicsNotReadyError, type KafkaOptions, type MessageBus, type TopicSpec } from './message-bus.js';
import { createProducer } from './producer.js';
import { createTopicAdmin } from './topic-admin.js';
import { readWholeTopic } from './topic-reader.js';

export {
  type ConsumerGroup,
  type ConsumerGroupOptions,
  type Feed,
  type InboundMessage,
  type PartitionOffset,
} from './consumer-group.js';
export * from './message-bus.js';

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
  const topicAdmin = createTopicAdmin(kafka.admin(), probeKafka.admin(), manageTopics, log);
  const declared: TopicSpec[] = [];
  let topicsReady: Promise<void> | null = null;
  const producer = createProducer({
    kafka,
    brokers,
    clientId,
    security,
    topicAdmin,
    topicsReady: () =>
      (topicsReady ??= topicAdmin.ensureTopics(declared).catch((err: unknown) => {
        topicsReady = null;
        throw err;
      })),
    produceTimeoutMs,
    maxPendingBytes,
    probeIntervalMs,
    onProduceError,
    log,
  });
  const consumers = new Set<Consumer>();

  const bus: MessageBus = {
    declareTopics(topics) {
      declared.push(...topics);
      topicsReady = null;
    },
    ensureTopics: (topics) => topicAdmin.ensureTopics(topics),
    available: () => producer.available(),
    produce: (topic, messages) => producer.produce(topic, messages),
    ping: (timeoutMs) => topicAdmin.probe(timeoutMs, 'kafka ping'),
    consumerLag: (groupId, topics, timeoutMs) => topicAdmin.consumerLag(groupId, topics, timeoutMs),
    topicOffsets: (topic, timeoutMs) => topicAdmin.topicOffsets(topic, timeoutMs),

    async readTopic(topic, timeoutMs) {
      if (!(await topicAdmin.topicExists(topic, timeoutMs))) return [];
      return readWholeTopic(kafka, await topicAdmin.connected(), topic, timeoutMs);
    },

    async checkAtStart(timeoutMs) {
      try {
        // First through the probe's client: without retries, refused access fails at once and
        // with its cause (the main client would retry for seconds and hide it behind a timeout).
        await topicAdmin.probe(timeoutMs, 'kafka start check');
        await withTimeout(topicAdmin.ensureTopics(declared), timeoutMs, 'kafka topics check');
        return true;
      } catch (err) {
        if (err instanceof TopicsNotReadyError) throw err;
        const denied = accessDeniedReason(err);
        if (denied) throw new KafkaAccessDeniedError(`Kafka (${brokers.join(',')}) refused this process: ${denied}`);
        log.warn({ err }, 'kafka did not answer at start; going on without it until it does');
        return false;
      }
    },

    consumerGroup(groupId, options = {}) {
      return createConsumerGroup({
        groupId,
        log,
        options,
        newConsumer: () => {
          const made = kafka.consumer({
            groupId,
            // Small fetches: decoding one holds the worker's event loop (and so its other applies),
            // and the fair queue needs no more than a chunk or two per partition at a time.
            maxBytesPerPartition: 1024 * 1024,
            maxBytes: 8 * 1024 * 1024,
            sessionTimeout: options.sessionTimeoutMs ?? 30_000,
            heartbeatInterval: Math.floor((options.sessionTimeoutMs ?? 30_000) / 10),
            // With every partition paused (the worker's buffer full) kafkajs sleeps this long before
            // it looks again; the default 5 s left a worker idle for seconds after it resumed.
            maxWaitTimeInMs: 250,
            allowAutoTopicCreation: false,
            // retry: the kafkaClient schedule (retry.ts). restartOnFailure: kafkajs never restarts a
            // crashed consumer itself; the group starts a fresh one (consumer-group.ts). Its own
            // restart could fire after the group had discarded that consumer, which could then crash
            // and restart again, a member of the group nobody tracked (clean-start's log, CI,
            // 2026-11-27).
            retry: { ...kafkajsRetry(schedules.kafkaClient), restartOnFailure: async () => false },
          });
          consumers.add(made);
          return made;
        },
        discarded: (consumer) => consumers.delete(consumer),
      });
    },

    async close() {
      await Promise.allSettled([...consumers].map((c) => c.disconnect()));
      await Promise.allSettled([producer.close(), topicAdmin.close()]);
    },
  };
  return bus;
}
