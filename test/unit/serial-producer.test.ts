import { describe, expect, it } from 'vitest';
import type { Admin, Producer, ProducerRecord } from 'kafkajs';
import { partitionCounts, partitionOf } from '../../src/shared/kafka/partitions.js';
import { createSerialProducer, SendExpiredError } from '../../src/shared/kafka/serial-producer.js';

/** A stub kafkajs producer whose sends settle when the test says so. */
function stubProducer(name: string, log: string[]) {
  const inFlight: { topic: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  const producer = {
    connect: async () => void log.push(`${name} connect`),
    disconnect: async () => void log.push(`${name} disconnect`),
    send: (record: ProducerRecord) =>
      new Promise((resolve, reject) => {
        log.push(`${name} send ${record.messages.map((m) => `${String(m.value)}@${m.partition}`).join(',')}`);
        inFlight.push({ topic: record.topic, resolve: () => resolve([]), reject });
      }),
  } as unknown as Producer;
  return { producer, inFlight };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
/** One message (value `name`) to the one topic the first tests use. */
const record = (name: string): ProducerRecord => ({ topic: 'x', messages: [{ value: name }] });
const later = () => Date.now() + 60_000;
const onePartition = async () => 1;

describe('serial producer', () => {
  it('makes one send at a time, in order', async () => {
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer, onePartition);
    const a = serial.send(record('a'), later());
    const b = serial.send(record('b'), later());
    await tick();
    expect(log).toEqual(['p1 connect', 'p1 send a@0']);
    expect(serial.queued()).toBe(2);
    stub.inFlight[0]!.resolve();
    await a;
    await tick();
    expect(log).toEqual(['p1 connect', 'p1 send a@0', 'p1 send b@0']);
    stub.inFlight[1]!.resolve();
    await b;
    expect(serial.queued()).toBe(0);
  });

  it('never makes a send still queued at its deadline', async () => {
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer, onePartition);
    const a = serial.send(record('a'), later());
    const b = serial.send(record('b'), Date.now() + 20);
    await expect(b).rejects.toBeInstanceOf(SendExpiredError);
    stub.inFlight[0]!.resolve();
    await a;
    const c = serial.send(record('c'), later());
    await tick();
    stub.inFlight[1]!.resolve();
    await c;
    expect(log).toEqual(['p1 connect', 'p1 send a@0', 'p1 send c@0']);
  });

  it('replaces the producer after a send it gave up on, and goes on with the queue', async () => {
    const log: string[] = [];
    const made: ReturnType<typeof stubProducer>[] = [];
    const replaced: unknown[] = [];
    const serial = createSerialProducer(
      () => {
        const stub = stubProducer(`p${made.length + 1}`, log);
        made.push(stub);
        return stub.producer;
      },
      onePartition,
      (reason) => replaced.push(reason),
    );
    const a = serial.send(record('a'), later());
    const b = serial.send(record('b'), later());
    await tick();
    made[0]!.inFlight[0]!.reject(new Error('out of order sequence'));
    await expect(a).rejects.toThrow('out of order sequence');
    await tick();
    made[1]!.inFlight[0]!.resolve();
    await b;
    expect(log).toEqual(['p1 connect', 'p1 send a@0', 'p1 disconnect', 'p2 connect', 'p2 send b@0']);
    expect(replaced).toHaveLength(1);
  });

  it('refuses queued and new sends once closed', async () => {
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer, onePartition);
    void serial.send(record('a'), later()).catch(() => undefined);
    const b = serial.send(record('b'), later());
    await tick();
    await serial.close();
    await expect(b).rejects.toThrow('producer closed');
    await expect(serial.send(record('c'), later())).rejects.toThrow('producer closed');
    expect(log).toEqual(['p1 connect', 'p1 send a@0', 'p1 disconnect']);
  });
});

describe('serial producer, per partition', () => {
  // Keys whose murmur2 partitions (of 3) differ, found with partitionOf itself.
  const keysByPartition = () => {
    const found = new Map<number, string>();
    for (let i = 0; found.size < 3; i++) {
      const p = partitionOf('t', { key: `k${i}`, value: '' }, 3);
      if (!found.has(p)) found.set(p, `k${i}`);
    }
    return found;
  };
  const keyed = (...keys: string[]): ProducerRecord => ({
    topic: 't',
    messages: keys.map((key) => ({ key, value: key })),
  });
  const threePartitions = async () => 3;

  it('sends to other partitions while one partition waits for its send', async () => {
    const keys = keysByPartition();
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer, threePartitions);
    const stuck = serial.send(keyed(keys.get(0)!), later());
    const samePartition = serial.send(keyed(keys.get(0)!), later());
    const other = serial.send(keyed(keys.get(1)!), later());
    await tick();
    expect(log).toEqual(['p1 connect', `p1 send ${keys.get(0)}@0`, `p1 send ${keys.get(1)}@1`]);
    stub.inFlight[1]!.resolve();
    await other;
    stub.inFlight[0]!.resolve();
    await stuck;
    await tick();
    expect(log.at(-1)).toBe(`p1 send ${keys.get(0)}@0`);
    stub.inFlight[2]!.resolve();
    await samePartition;
    expect(serial.queued()).toBe(0);
  });

  it('splits a record by partition (each message naming its own) and resolves when all parts are acknowledged', async () => {
    const keys = keysByPartition();
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer, threePartitions);
    let done = false;
    const sent = serial.send(keyed(keys.get(2)!, keys.get(0)!, keys.get(2)!), later()).then(() => (done = true));
    await tick();
    expect(log.slice(1)).toEqual([`p1 send ${keys.get(2)}@2,${keys.get(2)}@2`, `p1 send ${keys.get(0)}@0`]);
    stub.inFlight[0]!.resolve();
    await tick();
    expect(done).toBe(false);
    stub.inFlight[1]!.resolve();
    await sent;
  });

  it("fails the call when one partition's part fails, after every part settled", async () => {
    const keys = keysByPartition();
    const log: string[] = [];
    const made: ReturnType<typeof stubProducer>[] = [];
    const serial = createSerialProducer(() => {
      const stub = stubProducer(`p${made.length + 1}`, log);
      made.push(stub);
      return stub.producer;
    }, threePartitions);
    let settled = false;
    const sent = serial.send(keyed(keys.get(0)!, keys.get(1)!), later()).finally(() => (settled = true));
    await tick();
    made[0]!.inFlight[0]!.reject(new Error('out of order sequence'));
    await tick();
    expect(settled).toBe(false);
    made[0]!.inFlight[1]!.resolve();
    await expect(sent).rejects.toThrow('out of order sequence');
  });

  it('disconnects a replaced producer only once the sends it carries to other partitions settle', async () => {
    const keys = keysByPartition();
    const log: string[] = [];
    const made: ReturnType<typeof stubProducer>[] = [];
    const serial = createSerialProducer(() => {
      const stub = stubProducer(`p${made.length + 1}`, log);
      made.push(stub);
      return stub.producer;
    }, threePartitions);
    const failing = serial.send(keyed(keys.get(0)!), later());
    const other = serial.send(keyed(keys.get(1)!), later());
    await tick();
    made[0]!.inFlight[0]!.reject(new Error('out of order sequence'));
    await expect(failing).rejects.toThrow();
    const next = serial.send(keyed(keys.get(0)!), later());
    await tick();
    expect(log).toEqual([
      'p1 connect',
      `p1 send ${keys.get(0)}@0`,
      `p1 send ${keys.get(1)}@1`,
      'p2 connect',
      `p2 send ${keys.get(0)}@0`,
    ]);
    made[0]!.inFlight[1]!.resolve();
    await other;
    await tick();
    expect(log.at(-1)).toBe('p1 disconnect');
    made[1]!.inFlight[0]!.resolve();
    await next;
  });
});

describe('partition counts', () => {
  it("reads a topic's count once, then serves it from memory and refreshes it in the background", async () => {
    let count = 3;
    let reads = 0;
    let answer: (() => void) | null = null;
    const admin = {
      fetchTopicMetadata: ({ topics }: { topics: string[] }) => {
        reads++;
        return new Promise((resolve) => {
          const reply = () => resolve({ topics: [{ name: topics[0], partitions: Array.from({ length: count }) }] });
          if (reads === 1) reply();
          else answer = reply; // later reads answer when the test says so
        });
      },
    } as unknown as Admin;
    const countOf = partitionCounts(async () => admin, 20);
    expect(await Promise.all([countOf('t'), countOf('t')])).toEqual([3, 3]);
    expect(reads).toBe(1);
    await new Promise((r) => setTimeout(r, 30));
    count = 6;
    expect(await countOf('t')).toBe(3); // stale while the refresh has not answered: no wait
    expect(reads).toBe(2);
    answer!();
    await tick();
    expect(await countOf('t')).toBe(6);
  });

  it('chooses partitions as kafkajs does for keyed messages', () => {
    const p = partitionOf('t', { key: 'job-1', value: '' }, 12);
    expect(p).toBeGreaterThanOrEqual(0);
    expect(p).toBeLessThan(12);
    expect(partitionOf('other', { key: 'job-1', value: '' }, 12)).toBe(p);
    expect(partitionOf('t', { key: 'job-1', value: '', partition: 5 }, 12)).toBe(5);
  });
});
