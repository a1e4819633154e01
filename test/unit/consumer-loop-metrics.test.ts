import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import type { Pool } from '../../src/shared/db/pool.js';
import type { BatchHandler, ConsumerGroup, InboundMessage, MessageBus } from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { runWorkerKind } from '../../src/workers/consumer-loop.js';
import { applyEach, PermanentMessageError } from '../../src/workers/permanent-error.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';
import type { MessageOutcome, WorkerMetrics } from '../../src/workers/worker-metrics.js';

// What the consumer loop reports to WorkerMetrics where it decides an outcome (the policy itself
// is tested in consumer-loop.test.ts).

const message = (offset: number): InboundMessage => ({
  topic: 'work',
  partition: 0,
  offset: String(offset),
  key: `k${offset}`,
  value: Buffer.from(`v${offset}`),
  headers: {},
});

async function run(apply: (m: InboundMessage, attempt: number) => void, options: { attributing?: boolean } = {}) {
  const counts = new Map<MessageOutcome, number>();
  const durations: number[] = [];
  const metrics: WorkerMetrics = {
    messages: (kind, outcome, n = 1) => {
      expect(kind).toBe('unit');
      counts.set(outcome, (counts.get(outcome) ?? 0) + n);
    },
    applyDuration: (_kind, seconds) => durations.push(seconds),
    webhookAttempt: () => undefined,
    inboundChunk: () => undefined,
  };
  let handler: BatchHandler | undefined;
  const group = { run: async (_t: string[], h: BatchHandler) => void (handler = h) } as unknown as ConsumerGroup;
  const bus = { ensureTopics: async () => undefined, produce: async () => undefined } as unknown as MessageBus;
  const attempts = new Map<string, number>();
  const one = async (m: InboundMessage) => {
    const n = (attempts.get(m.offset) ?? 0) + 1;
    attempts.set(m.offset, n);
    apply(m, n);
  };
  const kind: WorkerKind = {
    name: 'unit',
    groupId: 'unit',
    topics: () => [{ topic: 'work', partitions: 1 }],
    async handleBatch(messages, _deps, ctx) {
      if (options.attributing === false) for (const m of messages) await one(m);
      else await applyEach(messages, ctx, one, _deps.logger);
    },
  };
  const deps = { config: {} as Config, logger: createLogger('silent', 'unit'), pool: {} as Pool, bus, metrics };
  await runWorkerKind(kind, group, deps, { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 });
  await handler!([message(0), message(1), message(2), message(3)], {
    heartbeat: async () => undefined,
    isStopping: () => false,
  });
  return { counts: Object.fromEntries(counts), durations };
}

const transient = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });

describe('consumer loop metrics', () => {
  it('counts every message of a clean batch as applied, with one duration per apply call', async () => {
    const { counts, durations } = await run(() => undefined);
    expect(counts).toEqual({ applied: 4 });
    expect(durations).toHaveLength(1);
    expect(durations[0]).toBeGreaterThanOrEqual(0);
  });

  it('counts a poison message as one failed attempt and dead-lettered, the rest applied', async () => {
    const { counts } = await run((m) => {
      if (m.offset === '1') throw new PermanentMessageError('message value is not JSON');
    });
    expect(counts).toEqual({ applied: 3, failed_attempt: 1, dead_lettered: 1 });
  });

  it('counts each failed attempt of a message that succeeds on retry, and applies it once', async () => {
    const { counts } = await run((m, attempt) => {
      if (m.offset === '2' && attempt <= 2) throw transient();
    });
    expect(counts).toEqual({ applied: 4, failed_attempt: 2 });
  });

  it('dead-letters a message whose transient failures use up its attempts', async () => {
    const { counts } = await run((m) => {
      if (m.offset === '3') throw transient();
    });
    expect(counts).toEqual({ applied: 3, failed_attempt: 3, dead_lettered: 1 });
  });

  it('counts a failed attempt for every message of a batch that fails without naming one', async () => {
    const { counts } = await run(
      (m, attempt) => {
        if (m.offset === '0' && attempt === 1) throw transient();
      },
      { attributing: false },
    );
    // The batch of 4 failed once as a whole, then applied whole.
    expect(counts).toEqual({ applied: 4, failed_attempt: 4 });
  });
});
