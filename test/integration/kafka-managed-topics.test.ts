import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { inject, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { createKafkaBus, TopicsNotReadyError, type TopicSpec } from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { topicsWithDeadLetters } from '../../src/workers/worker-kind.js';
import { uniqueName } from '../support/kafka.js';

// KAFKA_MANAGE_TOPICS=false: the platform owns the topics; the service creates none and refuses
// to start (one line naming each topic) until they exist with the partitions it needs.
const brokers = () => inject('kafkaBrokers').split(',');
const logger = createLogger('silent', 'test-kafka');

describe('managed topics', () => {
  it('are checked at start and never created', async () => {
    const prefix = uniqueName('managed');
    const topics: TopicSpec[] = [
      { topic: `${prefix}.a`, partitions: 3 },
      { topic: `${prefix}.b`, partitions: 2 },
    ];
    const managed = createKafkaBus({ brokers: brokers(), clientId: prefix, logger, manageTopics: false });
    const owner = createKafkaBus({ brokers: brokers(), clientId: `${prefix}-owner`, logger });
    try {
      managed.declareTopics(topics);
      const missing = await managed.checkAtStart(30_000).catch((err: unknown) => err);
      expect(missing).toBeInstanceOf(TopicsNotReadyError);
      expect((missing as Error).message).toContain(`${prefix}.a is missing (needs 3 partitions)`);
      expect((missing as Error).message).toContain(`${prefix}.b is missing (needs 2 partitions)`);

      // The platform creates one right and one with too few partitions.
      await owner.ensureTopics([topics[0]!, { ...topics[1]!, partitions: 1 }]);
      const short = await managed.checkAtStart(30_000).catch((err: unknown) => err);
      expect((short as Error).message).toContain(`${prefix}.b has 1 partitions, needs 2`);
      expect((short as Error).message).not.toContain(`${prefix}.a`);

      // What exists right passes; the managed bus created nothing of its own.
      await managed.ensureTopics([topics[0]!]);
      const listed = await managed.consumerLag(`${prefix}-nobody`, [topics[0]!.topic], 30_000);
      expect(listed).toHaveLength(3);
    } finally {
      await Promise.all([managed.close(), owner.close()]);
    }
  });
});

describe('topics the service creates', () => {
  it('keep acknowledged work whatever its size: retention.bytes -1 on each topic and its dead-letter topic', async () => {
    const prefix = `${uniqueName('retention')}.`;
    const config = loadConfig({ KAFKA_TOPIC_PREFIX: prefix });
    const specs = [inboundWorker, inboundExpressWorker].flatMap((kind) => topicsWithDeadLetters(kind, config.kafka));
    const bus = createKafkaBus({ brokers: brokers(), clientId: prefix, logger });
    const kafka = new Kafka({ brokers: brokers(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    try {
      await bus.ensureTopics(specs);
      await admin.connect();
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: specs.map((t) => ({
          type: ConfigResourceTypes.TOPIC,
          name: t.topic,
          configNames: ['retention.bytes'],
        })),
      });
      expect(resources).toHaveLength(4); // both inbound kinds' topics and their .dlq topics
      for (const r of resources) expect(r.configEntries[0]!.configValue, r.resourceName).toBe('-1');
    } finally {
      await admin.disconnect();
      await bus.close();
    }
  });
});
