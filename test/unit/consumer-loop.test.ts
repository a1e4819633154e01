import { describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import type { Pool } from '../../src/shared/db/pool.js';
import {
  PartitionsRevokedError,
  type BatchHandler,
  type ConsumerGroup,
  type InboundMessage,
  type MessageBus,
  type OutboundMessage,
} from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { runWorkerKind, type RetryPolicy } from '../../src/workers/consumer-loop.js';
import { applyEach, PermanentMessageError } from '../../src/workers/permanent-error.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';

// The failure policy alone, with the broker stubbed (the real-Kafka path is in
// test/integration/kafka-bus.test.ts and test/integration/poison-isolation.test.ts).

const pgError = (code: string, message = `sqlstate ${code}`) => Object.assign(new Error(message), { code });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

const message = (offset: number, key = `k${offset}`): InboundMessage => ({
  topic: 'work',
  partition: 0,
  offset: String(offset),
  key,
  value: Buffer.from(`v${offset}`),
  headers: {},
});

type HarnessOptions = {
  /** false: a kind that applies its batch without applyEach, so a failure names no message. */
  attributing?: boolean;
  policy?: RetryPolicy;
  onDeadLetter?: (message: InboundMessage, error: Error) => void | Promise<void>;
};

/** A stubbed kind whose messages run `apply`; records attempts, applies, batches and dead letters. */
function harness(
  apply: (message: InboundMessage, attempt: number) => void | Promise<void>,
  options: HarnessOptions = {},
) {
  let handler: BatchHandler | undefined;
  const dlq: { topic: string; origin: string; error: string; value: string }[] = [];
  const reported: { offset: string; error: string }[] = [];
  const applied: string[] = [];
  const batches: string[][] = [];
  const attempts = new Map<string, number>();
  let stopping = false;
  const group = { run: async (_t: string[], h: BatchHandler) => void (handler = h) } as unknown as ConsumerGroup;
  const bus = {
    ensureTopics: async () => undefined,
    produce: async (topic: string, messages: OutboundMessage[]) => {
      for (const m of messages)
        dlq.push({
          topic,
          origin: m.headers!['x-dlq-origin']!,
          error: m.headers!['x-dlq-error']!,
          value: String(m.value),
        });
    },
  } as unknown as MessageBus;
  const one = async (m: InboundMessage) => {
    const attempt = (attempts.get(m.offset) ?? 0) + 1;
    attempts.set(m.offset, attempt);
    await apply(m, attempt);
    applied.push(m.offset);
  };
  const kind: WorkerKind = {
    name: 'unit',
    groupId: 'unit',
    topics: () => [{ topic: 'work', partitions: 1 }],
    async handleBatch(messages, _deps, ctx) {
      batches.push(messages.map((m) => m.offset));
      if (options.attributing === false) for (const m of messages) await one(m);
      else await applyEach(messages, ctx, one, _deps.logger);
    },
    async onDeadLetter(m, error) {
      await options.onDeadLetter?.(m, error);
      reported.push({ offset: m.offset, error: error.message });
    },
  };
  const deps = { config: {} as Config, logger: createLogger('silent', 'unit'), pool: {} as Pool, bus };
  const ctx = { heartbeat: async () => undefined, isStopping: () => stopping };
  return {
    start: () => runWorkerKind(kind, group, deps, options.policy ?? { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }),
    deliver: (messages: InboundMessage[] = [message(0)]) => handler!(messages, ctx),
    stop: () => void (stopping = true),
    attemptsOf: (offset: number) => attempts.get(String(offset)) ?? 0,
    applied,
    batches,
    dlq,
    reported,
  };
}

/**
 * Runs fn with setTimeout faked: true when it finished without scheduling a timer, i.e. without
 * any backoff (false as soon as it schedules one; the stubbed loop otherwise runs on microtasks).
 */
async function finishesWithoutWaiting(fn: () => Promise<unknown>): Promise<boolean> {
  vi.useFakeTimers({ toFake: ['setTimeout'] });
  try {
    let done = false;
    const run = fn().finally(() => (done = true));
    while (!done && vi.getTimerCount() === 0) await new Promise((resolve) => setImmediate(resolve));
    if (!done) return false;
    await run;
    return true;
  } finally {
    vi.useRealTimers();
  }
}

// A backoff this long would time the test out: the permanent paths must not wait at all.
const slowPolicy: RetryPolicy = { attempts: 5, baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 };

describe('consumer failure policy: permanent failures', () => {
  it.each([
    ['numeric field overflow (22003)', () => pgError('22003', 'numeric field overflow')],
    ['integer out of range (22003)', () => pgError('22003', 'value "1000000000000" is out of range for type integer')],
    ['not-null violation (23502)', () => pgError('23502', 'null value in column "name" violates not-null constraint')],
    [
      'datatype mismatch (42804)',
      () => pgError('42804', 'column "x" is of type integer but expression is of type text'),
    ],
    ['PermanentMessageError', () => new PermanentMessageError('message value is not JSON')],
  ])('dead-letters a message failing with %s at once: one attempt, no backoff, its kind told', async (_, error) => {
    const poison = error();
    const h = harness(
      (m) => {
        if (m.offset === '1') throw poison;
      },
      { policy: slowPolicy },
    );
    await h.start();
    expect(await finishesWithoutWaiting(() => h.deliver([message(0), message(1), message(2)]))).toBe(true);
    expect(h.attemptsOf(1)).toBe(1);
    expect(h.applied).toEqual(['0', '2']);
    expect(h.dlq).toEqual([{ topic: 'work.dlq', origin: 'work/0/1', error: poison.message, value: 'v1' }]);
    expect(h.reported).toEqual([{ offset: '1', error: poison.message }]);
    // The batch went on from the message after the poison: nothing applied twice.
    expect(h.batches).toEqual([['0', '1', '2'], ['2']]);
  });

  it('dead-letters several poison messages of one batch, each after one attempt, the good ones applied once', async () => {
    const h = harness(
      (m) => {
        if (Number(m.offset) % 3 === 1) throw pgError('22P02', 'invalid input syntax for type integer: "1.5"');
      },
      { policy: slowPolicy },
    );
    await h.start();
    const batch = Array.from({ length: 9 }, (_, i) => message(i, i % 2 ? 'a' : 'b'));
    expect(await finishesWithoutWaiting(() => h.deliver(batch))).toBe(true);
    expect(h.dlq.map((d) => d.origin)).toEqual(['work/0/1', 'work/0/4', 'work/0/7']);
    expect(h.reported.map((r) => r.offset)).toEqual(['1', '4', '7']);
    expect(h.applied).toEqual(['0', '2', '3', '5', '6', '8']);
    for (let i = 0; i < 9; i++) expect(h.attemptsOf(i)).toBe(1);
  });

  it('splits a batch that fails permanently without naming the message at once, then dead-letters it alone', async () => {
    const h = harness(
      (m) => {
        if (m.offset === '1') throw pgError('23514', 'new row violates check constraint');
      },
      { attributing: false, policy: slowPolicy },
    );
    await h.start();
    expect(await finishesWithoutWaiting(() => h.deliver([message(0), message(1), message(2)]))).toBe(true);
    expect(h.batches).toEqual([['0', '1', '2'], ['0'], ['1'], ['2']]); // no batch retry
    expect(h.attemptsOf(1)).toBe(2); // in the batch, then alone: the kind did not say which failed
    expect(h.dlq.map((d) => d.origin)).toEqual(['work/0/1']);
    expect(h.reported.map((r) => r.offset)).toEqual(['1']);
  });

  it('retries reporting a dead-lettered message while PostgreSQL is unreachable, then marks it', async () => {
    let hookCalls = 0;
    const h = harness(
      () => {
        throw new PermanentMessageError('unknown version');
      },
      {
        onDeadLetter: () => {
          if (++hookCalls <= 3) throw refused();
        },
      },
    );
    await h.start();
    await h.deliver();
    expect(h.attemptsOf(0)).toBe(1);
    expect(h.dlq).toHaveLength(1);
    expect(hookCalls).toBe(4);
    expect(h.reported).toEqual([{ offset: '0', error: 'unknown version' }]);
  });

  it('moves on when reporting a dead-lettered message keeps failing (the message is in the dead-letter topic)', async () => {
    const h = harness(
      (m) => {
        if (m.offset === '0') throw new PermanentMessageError('unknown version');
      },
      {
        onDeadLetter: () => {
          throw pgError('22P02', 'bad reason');
        },
      },
    );
    await h.start();
    await h.deliver([message(0), message(1)]);
    expect(h.dlq.map((d) => d.origin)).toEqual(['work/0/0']);
    expect(h.reported).toEqual([]);
    expect(h.applied).toEqual(['1']);
  });
});

describe('consumer failure policy: transient failures and outages', () => {
  it('retries a transient failure with backoff, then dead-letters the message once its attempts are used up', async () => {
    const h = harness(() => {
      throw pgError('40P01', 'deadlock detected');
    });
    await h.start();
    await h.deliver();
    expect(h.attemptsOf(0)).toBe(2);
    expect(h.dlq.map((d) => d.origin)).toEqual(['work/0/0']);
    expect(h.reported).toEqual([{ offset: '0', error: 'deadlock detected' }]);
  });

  it('waits a transient failure out with backoff (it does not finish at once)', async () => {
    const h = harness((_, attempt) => {
      if (attempt === 1) throw pgError('40001', 'could not serialize access');
    });
    await h.start();
    expect(await finishesWithoutWaiting(() => h.deliver())).toBe(false);
  });

  it("lets the batch's good messages go past a message waiting out a transient failure; its key's later ones wait", async () => {
    const h = harness((m, attempt) => {
      if (m.offset === '1' && attempt === 1) throw pgError('55P03', 'could not obtain lock');
    });
    await h.start();
    await h.deliver([message(0, 'a'), message(1, 'b'), message(2, 'b'), message(3, 'c')]);
    expect(h.applied).toEqual(['0', '3', '1', '2']);
    expect([0, 1, 2, 3].map(h.attemptsOf)).toEqual([1, 2, 1, 1]);
    expect(h.dlq).toEqual([]);
  });

  it('retries a batch that fails transiently without naming the message, then message by message', async () => {
    const h = harness(
      (m) => {
        if (m.offset === '1') throw new Error('bad data');
      },
      { attributing: false },
    );
    await h.start();
    await h.deliver([message(0), message(1)]);
    expect(h.attemptsOf(1)).toBe(4); // 2 as a batch, 2 alone
    expect(h.batches).toEqual([['0', '1'], ['0', '1'], ['0'], ['1'], ['1']]);
    expect(h.dlq.map((d) => d.origin)).toEqual(['work/0/1']);
  });

  it('waits out an unreachable database instead of dead-lettering good messages', async () => {
    const h = harness((_, attempt) => {
      if (attempt <= 6) throw refused();
    });
    await h.start();
    await h.deliver();
    expect(h.dlq).toEqual([]);
    expect(h.attemptsOf(0)).toBe(7);
    expect(h.applied).toEqual(['0']);
  });

  it('waits out an unreachable database in the middle of a batch, then applies the rest in order', async () => {
    let down = 3;
    const h = harness((m) => {
      if (m.offset === '1' && down-- > 0) throw refused();
    });
    await h.start();
    await h.deliver([message(0), message(1), message(2)]);
    expect(h.applied).toEqual(['0', '1', '2']);
    expect([0, 1, 2].map(h.attemptsOf)).toEqual([1, 4, 1]);
    expect(h.dlq).toEqual([]);
  });

  it('retries an error whose code is a number (kafkajs) like any other failure', async () => {
    const h = harness((_, attempt) => {
      if (attempt === 1) throw Object.assign(new Error('The group is rebalancing'), { code: 27, retriable: true });
    });
    await h.start();
    await h.deliver();
    expect(h.dlq).toEqual([]);
    expect(h.attemptsOf(0)).toBe(2);
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
    expect(h.dlq).toEqual([]);
    expect(h.attemptsOf(0)).toBe(1);
  });

  it('leaves a batch uncommitted when stopping with a transient retry pending, but still dead-letters poison', async () => {
    const deadlock = pgError('40P01', 'deadlock detected');
    let h: ReturnType<typeof harness> | undefined = undefined;
    h = harness((m) => {
      if (m.offset === '0') throw new PermanentMessageError('unknown version');
      if (m.offset === '2') {
        h!.stop(); // SIGTERM arrives while message 2 fails
        throw deadlock;
      }
    });
    await h.start();
    await expect(h.deliver([message(0), message(1), message(2)])).rejects.toBe(deadlock);
    expect(h.dlq.map((d) => d.origin)).toEqual(['work/0/0']);
    expect(h.applied).toEqual(['1']);
  });
});

describe('consumer failure policy: stopping', () => {
  it('gives the rest of a batch back uncommitted once the worker is stopping', async () => {
    let h: ReturnType<typeof harness> | undefined = undefined;
    h = harness((m) => {
      if (m.offset === '1') h!.stop(); // SIGTERM arrives while message 1 is applied
    });
    await h.start();
    await expect(h.deliver([message(0), message(1), message(2), message(3)])).rejects.toBeInstanceOf(
      PartitionsRevokedError,
    );
    expect(h.applied).toEqual(['0', '1']);
    expect(h.dlq).toEqual([]);
  });
});
