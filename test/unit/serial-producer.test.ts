import { describe, expect, it } from 'vitest';
import type { Producer, ProducerRecord } from 'kafkajs';
import { createSerialProducer, SendExpiredError } from '../../src/shared/kafka/serial-producer.js';

/** A stub kafkajs producer whose sends settle when the test says so. */
function stubProducer(name: string, log: string[]) {
  const inFlight: { topic: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  const producer = {
    connect: async () => void log.push(`${name} connect`),
    disconnect: async () => void log.push(`${name} disconnect`),
    send: (record: ProducerRecord) =>
      new Promise((resolve, reject) => {
        log.push(`${name} send ${record.topic}`);
        inFlight.push({ topic: record.topic, resolve: () => resolve([]), reject });
      }),
  } as unknown as Producer;
  return { producer, inFlight };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
const record = (topic: string): ProducerRecord => ({ topic, messages: [{ value: topic }] });
const later = () => Date.now() + 60_000;

describe('serial producer', () => {
  it('makes one send at a time, in order', async () => {
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer);
    const a = serial.send(record('a'), later());
    const b = serial.send(record('b'), later());
    await tick();
    expect(log).toEqual(['p1 connect', 'p1 send a']);
    expect(serial.queued()).toBe(2);
    stub.inFlight[0]!.resolve();
    await a;
    await tick();
    expect(log).toEqual(['p1 connect', 'p1 send a', 'p1 send b']);
    stub.inFlight[1]!.resolve();
    await b;
    expect(serial.queued()).toBe(0);
  });

  it('never makes a send still queued at its deadline', async () => {
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer);
    const a = serial.send(record('a'), later());
    const b = serial.send(record('b'), Date.now() + 20);
    await expect(b).rejects.toBeInstanceOf(SendExpiredError);
    stub.inFlight[0]!.resolve();
    await a;
    const c = serial.send(record('c'), later());
    await tick();
    stub.inFlight[1]!.resolve();
    await c;
    expect(log).toEqual(['p1 connect', 'p1 send a', 'p1 send c']);
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
    expect(log).toEqual(['p1 connect', 'p1 send a', 'p1 disconnect', 'p2 connect', 'p2 send b']);
    expect(replaced).toHaveLength(1);
  });

  it('refuses queued and new sends once closed', async () => {
    const log: string[] = [];
    const stub = stubProducer('p1', log);
    const serial = createSerialProducer(() => stub.producer);
    void serial.send(record('a'), later()).catch(() => undefined);
    const b = serial.send(record('b'), later());
    await tick();
    await serial.close();
    await expect(b).rejects.toThrow('producer closed');
    await expect(serial.send(record('c'), later())).rejects.toThrow('producer closed');
    expect(log).toEqual(['p1 connect', 'p1 send a', 'p1 disconnect']);
  });
});
