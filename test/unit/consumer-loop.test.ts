import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import type { Pool } from '../../src/shared/db/pool.js';
import {
  PartitionsRevokedError,
  type BatchHandler,
  type ConsumerGroup,
  type InboundMessage,
  type MessageBus,
} from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { runWorkerKind } from '../../src/workers/consumer-loop.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';

// The failure policy alone, with the broker stubbed (the real-Kafka path is in
// test/integration/kafka-bus.test.ts).
function harness(handle: (attempt: number) => void) {
  let handler: BatchHandler | undefined;
  const deadLettered: string[] = [];
  let calls = 0;
  const group = { run: async (_t: string[], h: BatchHandler) => void (handler = h) } as unknown as ConsumerGroup;
  const bus = {
    ensureTopics: async () => undefined,
    produce: async (topic: string) => void deadLettered.push(topic),
  } as unknown as MessageBus;
  const kind: WorkerKind = {
    name: 'unit',
    groupId: 'unit',
    topics: () => [{ topic: 'work', partitions: 1 }],
    handleBatch: async () => handle(++calls),
  };
  const deps = { config: {} as Config, logger: createLogger('silent', 'unit'), pool: {} as Pool, bus };
  const message: InboundMessage = {
    topic: 'work',
    partition: 0,
    offset: '0',
    key: 'k',
    value: Buffer.from('v'),
    headers: {},
  };
  const ctx = { heartbeat: async () => undefined, isStopping: () => false };
  return {
    start: () => runWorkerKind(kind, group, deps, { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }),
    deliver: () => handler!([message], ctx),
    deadLettered,
    calls: () => calls,
  };
}

describe('consumer failure policy', () => {
  it('dead-letters a message that keeps failing, after the batch and message attempts', async () => {
    const h = harness(() => {
      throw new Error('bad data');
    });
    await h.start();
    await h.deliver();
    expect(h.deadLettered).toEqual(['work.dlq']);
    expect(h.calls()).toBe(4); // 2 as a batch, 2 alone
  });

  it('waits out an unreachable database instead of dead-lettering good messages', async () => {
    const h = harness((call) => {
      if (call <= 6) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    });
    await h.start();
    await h.deliver();
    expect(h.deadLettered).toEqual([]);
    expect(h.calls()).toBe(7);
  });

  it('retries an error whose code is a number (kafkajs) like any other failure', async () => {
    const h = harness((call) => {
      if (call === 1) throw Object.assign(new Error('The group is rebalancing'), { code: 27, retriable: true });
    });
    await h.start();
    await h.deliver();
    expect(h.deadLettered).toEqual([]);
    expect(h.calls()).toBe(2);
  });

  it('gives a batch up, without dead-lettering, when the group takes its partition away', async () => {
    const revoked = new PartitionsRevokedError(
      Object.assign(new Error('rebalancing'), { type: 'REBALANCE_IN_PROGRESS' }),
    );
    const h = harness(() => {
      throw revoked;
    });
    await h.start();
    await expect(h.deliver()).rejects.toBe(revoked);
    expect(h.deadLettered).toEqual([]);
    expect(h.calls()).toBe(1);
  });
});
