import { afterAll, describe, expect, inject, it } from 'vitest';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadConfig } from '../../src/shared/config.js';
import { createKafkaBus } from '../../src/shared/kafka/bus.js';
import { runWorkerKind } from '../../src/workers/consumer-loop.js';
import { noWorkerMetrics } from '../../src/workers/worker-metrics.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import { deadLetterTopic } from '../../src/shared/dead-letters/headers.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';
import type { Pool } from '../../src/shared/db/pool.js';
import { eventually, testBus, uniqueName, reading } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';

// Against the pinned broker (scripts/kafka) or whatever KAFKA_BROKERS names.
const bus = testBus();
afterAll(() => bus.close());

describe('Kafka adapter against the real broker', () => {
  it('administers topics, produces durably and consumes in a group', async () => {
    const topic = uniqueName('roundtrip');
    await bus.ensureTopics([{ topic, partitions: 3 }]);
    await bus.ensureTopics([{ topic, partitions: 3 }]); // idempotent

    const sent = Array.from({ length: 30 }, (_, i) => ({
      key: `k${i % 5}`,
      value: `v${i}`,
      headers: { n: String(i) },
    }));
    await bus.produce(topic, sent);

    const received: InboundMessage[] = [];
    const group = bus.consumerGroup(uniqueName('group'));
    await group.run(
      [topic],
      reading((messages) => void received.push(...messages)),
    );
    await eventually(() => (received.length >= 30 ? true : undefined), 30_000, 'all messages');
    await group.stop();

    expect(received.map((m) => m.value!.toString()).sort()).toEqual(sent.map((m) => m.value).sort());
    // One key always lands on one partition, in order.
    for (let k = 0; k < 5; k++) {
      const ofKey = received.filter((m) => m.key === `k${k}`);
      expect(new Set(ofKey.map((m) => m.partition)).size).toBe(1);
      const ns = ofKey.map((m) => Number(m.headers.n));
      expect(ns).toEqual([...ns].sort((a, b) => a - b));
    }
  });

  it('produces more bytes of one key than the topic takes in one record batch (max.message.bytes)', async () => {
    const topic = uniqueName('big');
    await bus.ensureTopics([{ topic, partitions: 1, configs: { 'max.message.bytes': String(4 * 1024 * 1024) } }]);
    const value = 'x'.repeat(500 * 1024); // like inbound chunks: 12 × 500 KiB of one import job > 4 MiB
    await bus.produce(
      topic,
      Array.from({ length: 12 }, () => ({ key: 'job', value })),
    );
    // All twelve are in the topic: the producer split them over record batches the topic takes.
    const [partition] = await bus.topicOffsets(topic, 10_000);
    expect(partition!.high - partition!.low).toBe(12);
  });

  it('commits the offsets it is told to: a new member of the group does not see committed messages again', async () => {
    const topic = uniqueName('commit');
    const groupId = uniqueName('group');
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    await bus.produce(topic, [
      { key: 'a', value: '1' },
      { key: 'a', value: '2' },
    ]);
    const first: string[] = [];
    const g1 = bus.consumerGroup(groupId);
    await g1.run(
      [topic],
      reading((ms) => void first.push(...ms.map((m) => m.value!.toString()))),
    );
    await eventually(() => (first.length === 2 ? true : undefined));
    await g1.commit([{ topic, partition: 0, offset: '2' }]); // the next offset to read
    await g1.stop();

    await bus.produce(topic, [{ key: 'a', value: '3' }]);
    const second: string[] = [];
    const g2 = bus.consumerGroup(groupId);
    await g2.run(
      [topic],
      reading((ms) => void second.push(...ms.map((m) => m.value!.toString()))),
    );
    await eventually(() => (second.length >= 1 ? true : undefined));
    await g2.stop();
    expect(first).toEqual(['1', '2']);
    expect(second).toEqual(['3']);
  });

  it('the consumer loop retries, then dead-letters only the poison message', async () => {
    const prefix = `${uniqueName('loop')}.`;
    const config = loadConfig({ KAFKA_TOPIC_PREFIX: prefix });
    const topic = `${prefix}work`;
    const applied: string[] = [];
    const deadLettered: string[] = [];
    let attemptsOnPoison = 0;
    const kind: WorkerKind = {
      name: 'test',
      groupId: 'test',
      topics: () => [{ topic, partitions: 1 }],
      async apply(message) {
        if (message.value!.toString() === 'poison') {
          attemptsOnPoison++;
          throw new Error('cannot apply poison');
        }
        applied.push(message.value!.toString());
      },
      async onDeadLetter(message) {
        deadLettered.push(message.value!.toString());
      },
    };
    const group = bus.consumerGroup(`${prefix}test`);
    const deps = { config, logger: createLogger('silent', 'test'), pool: {} as Pool, bus, metrics: noWorkerMetrics };
    const running = await runWorkerKind({ kind, group, deps, messageRetry: { attempts: 3, baseMs: 10, maxMs: 50 } });
    await bus.produce(
      topic,
      ['a', 'poison', 'b'].map((v) => ({ key: 'same', value: v })),
    );

    const dlq: InboundMessage[] = [];
    const dlqGroup = bus.consumerGroup(uniqueName('dlq-reader'));
    await dlqGroup.run(
      [deadLetterTopic(topic)],
      reading((ms) => void dlq.push(...ms)),
    );
    await eventually(() => (dlq.length === 1 && applied.includes('b') ? true : undefined), 30_000, 'dead letter');
    await Promise.all([running.stop(), dlqGroup.stop()]);

    expect(applied).toEqual(expect.arrayContaining(['a', 'b']));
    expect(applied).not.toContain('poison');
    expect(deadLettered).toEqual(['poison']);
    expect(dlq[0]!.value!.toString()).toBe('poison');
    expect(dlq[0]!.headers['x-dlq-error']).toBe('cannot apply poison');
    expect(dlq[0]!.headers['x-dlq-origin']).toMatch(new RegExp(`^${topic.replace(/\./g, '\\.')}/0/\\d+$`));
    expect(attemptsOnPoison).toBe(3); // a transient failure: the schedule's attempts, then the dead-letter topic
  });

  it('dead-letters a poison message larger than the broker default (the .dlq takes what its topic takes)', async () => {
    const prefix = `${uniqueName('bigdlq')}.`;
    const config = loadConfig({ KAFKA_TOPIC_PREFIX: prefix });
    const topic = `${prefix}work`;
    const kind: WorkerKind = {
      name: 'test',
      groupId: 'test',
      topics: () => [{ topic, partitions: 1, configs: { 'max.message.bytes': String(4 * 1024 * 1024) } }],
      async apply() {
        throw new PermanentMessageError('never applies');
      },
    };
    const group = bus.consumerGroup(`${prefix}test`);
    const deps = { config, logger: createLogger('silent', 'test'), pool: {} as Pool, bus, metrics: noWorkerMetrics };
    const running = await runWorkerKind({ kind, group, deps, messageRetry: { attempts: 1, baseMs: 10, maxMs: 10 } });
    const big = 'p'.repeat(2 * 1024 * 1024); // an inbound chunk may be up to 3 MiB (INBOUND_CHUNK_MAX_BYTES)
    await bus.produce(topic, [{ key: 'k', value: big }]);

    const dlq: InboundMessage[] = [];
    const dlqGroup = bus.consumerGroup(uniqueName('dlq-reader'));
    await dlqGroup.run(
      [deadLetterTopic(topic)],
      reading((ms) => void dlq.push(...ms)),
    );
    await eventually(() => (dlq.length === 1 ? true : undefined), 30_000, 'dead letter');
    await Promise.all([running.stop(), dlqGroup.stop()]);
    expect(dlq[0]!.value!.length).toBe(big.length);
  });

  it('a send that only ran out of time does not mark a broker that answers down (one slow upload, not an outage)', async () => {
    const impatient = createKafkaBus({
      brokers: inject('kafkaBrokers').split(','),
      clientId: uniqueName('impatient'),
      logger: createLogger('silent', 'test'),
      produceTimeoutMs: 1, // no broker answers 6 MB in a millisecond
    });
    const topic = uniqueName('slow');
    await impatient.ensureTopics([{ topic, partitions: 1, configs: { 'max.message.bytes': String(4 * 1024 * 1024) } }]);
    const value = 'x'.repeat(500 * 1024);
    await expect(
      impatient.produce(
        topic,
        Array.from({ length: 12 }, () => ({ key: 'job', value })),
      ),
    ).rejects.toThrow(/timed out after 1 ms/);
    // Not marked down on the spot (as a refused connection would be) …
    expect(impatient.available()).toBe(true);
    // … nor once the check's probe (at most 2 s) has had its answer: other writers go on.
    await new Promise((r) => setTimeout(r, scaled(3000)));
    expect(impatient.available()).toBe(true);
    await impatient.close();
  });

  it('bounds the bytes of unsettled sends, and fails fast once the broker is known down', async () => {
    // Nothing listens on port 1: sends hang in kafkajs's retries, as with a Kafka that is down.
    const down = createKafkaBus({
      brokers: ['127.0.0.1:1'],
      clientId: uniqueName('down'),
      logger: createLogger('silent', 'test'),
      produceTimeoutMs: 2000,
      maxPendingBytes: 1000,
    });
    const message = { key: 'k', value: 'x'.repeat(800) };
    const first = down.produce('t', [message]);
    // Refused by the bound while the first send is still waiting (not a second wait).
    await expect(down.produce('t', [message])).rejects.toThrow(/801 bytes of earlier sends still pending/);
    await expect(first).rejects.toThrow(/timed out/);
    // The timeout led to a probe, which failed too: the broker is down and the next send is
    // refused without waiting.
    await eventually(() => (down.available() ? undefined : true), 10_000, 'the broker marked down');
    await expect(down.produce('t', [{ key: 'k', value: 'y' }])).rejects.toThrow(/the broker is unreachable/);
    await down.close();
  });
});
