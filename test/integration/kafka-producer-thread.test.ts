import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { isBrokerUnreachable } from '../../src/shared/kafka/availability.js';
import { createThreadedProducer } from '../../src/shared/kafka/producer-thread.js';
import { createLogger } from '../../src/shared/logger.js';
import { eventually, testBus, uniqueName, reading } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';

// The producer thread large sends go through (producer-thread.ts), against the real broker.
const brokers = inject('kafkaBrokers').split(',');
const bus = testBus();
const log = createLogger('silent', 'test-producer-thread');
afterAll(() => bus.close());

/** The nice values of this process's threads of that name (Linux). */
const threadNice = (name: string) =>
  readdirSync('/proc/self/task')
    .map((tid) => readFileSync(`/proc/self/task/${tid}/stat`, 'utf8'))
    .filter((stat) => stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === name)
    .map((stat) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));

describe('the Kafka producer thread', () => {
  it('delivers what it is given, bytes handed over or copied, in order per key', async () => {
    const topic = uniqueName('thread');
    await bus.ensureTopics([{ topic, partitions: 2 }]);
    const producer = createThreadedProducer({ brokers, clientId: uniqueName('thread'), log });
    // Large Buffers own their memory (handed over to the thread); small ones are pool slices and
    // strings are copied.
    const sent = Array.from({ length: 12 }, (_, i) => ({
      key: `k${i % 3}`,
      value: i % 3 === 0 ? `text ${i}` : Buffer.from(`bytes ${i} ${'x'.repeat(i % 3 === 1 ? 100_000 : 10)}`),
      headers: { n: String(i) },
    }));
    const expected = sent.map((m) => Buffer.from(m.value).toString());
    await producer.send(topic, sent.slice(0, 6), Date.now() + 60_000);
    await producer.send(topic, sent.slice(6), Date.now() + 60_000);
    // The thread is named for operators (`top -H`) and runs at nice 10 (src/shared/bulk-thread.ts).
    if (process.platform === 'linux') expect(threadNice('kafka-producer')).toEqual([10]);
    await producer.close();

    const received: InboundMessage[] = [];
    const group = bus.consumerGroup(uniqueName('group'));
    await group.run(
      [topic],
      reading((messages) => void received.push(...messages)),
    );
    await eventually(() => (received.length >= 12 ? true : undefined), 30_000, 'all messages');
    await group.stop();

    expect(received.map((m) => m.value!.toString()).sort()).toEqual([...expected].sort());
    for (let k = 0; k < 3; k++) {
      const ns = received.filter((m) => m.key === `k${k}`).map((m) => Number(m.headers.n));
      expect(ns).toEqual([...ns].sort((a, b) => a - b));
    }
  });

  it(
    'fails a send with an error the bus reads as "broker unreachable" when no broker answers',
    async () => {
      const producer = createThreadedProducer({ brokers: ['127.0.0.1:1'], clientId: uniqueName('thread'), log });
      const failure = await producer
        .send('nowhere', [{ key: 'k', value: Buffer.alloc(10_000) }], Date.now() + 60_000)
        .then(
          () => null,
          (err: unknown) => err,
        );
      await producer.close();
      expect(failure).toBeInstanceOf(Error);
      expect(isBrokerUnreachable(failure)).toBe(true);
    },
    scaled(60_000),
  );
});
