import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import type { Pool } from '../../src/shared/db/pool.js';
import type {
  ConsumerGroup,
  Feed,
  InboundMessage,
  MessageBus,
  OutboundMessage,
  PartitionOffset,
} from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { tenantHeader } from '../../src/shared/messages.js';
import type { RetrySchedule } from '../../src/shared/retry.js';
import { runWorkerKind } from '../../src/workers/consumer-loop.js';
import { decodeJson, NewerMessageVersion } from '../../src/workers/decode.js';
import { jobMessageSchema } from '../../src/shared/jobs/job-message.js';
import { EdgeRecordPending } from '../../src/workers/edge-record.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import type { WorkerKind } from '../../src/workers/worker-kind.js';
import type { MessageOutcome, WorkerMetrics } from '../../src/workers/worker-metrics.js';

// The consumer loop over a stubbed group and bus: failure policy, concurrency, waits, commits and
// metrics (the fair order itself is tested in fair-queue.test.ts, the real broker in
// test/integration/kafka-bus.test.ts, poison-isolation.test.ts and orphan-isolation.test.ts).

const pgError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

const message = (offset: number, key = `k${offset}`, topic = 'work'): InboundMessage => ({
  topic,
  partition: 0,
  offset: String(offset),
  key,
  value: Buffer.from(`v${offset}`),
  headers: { [tenantHeader]: 't' },
});

const until = async (check: () => boolean, what: string) => {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
};

type Apply = (m: InboundMessage, attempt: number) => void | Promise<void>;

async function harness(
  apply: Apply,
  options: {
    schedule?: RetrySchedule;
    concurrency?: number;
    onDeadLetter?: (m: InboundMessage) => void | Promise<void>;
  } = {},
) {
  let feed: Feed | undefined;
  const commits: PartitionOffset[] = [];
  const group = {
    run: async (_t: string[], f: Feed) => void (feed = f),
    pause: () => undefined,
    resume: () => undefined,
    commit: async (offsets: PartitionOffset[]) => void commits.push(...offsets),
    stop: async () => undefined,
  } as unknown as ConsumerGroup;
  const dlq: { origin: string; error: string }[] = [];
  const bus = {
    ensureTopics: async () => undefined,
    produce: async (_topic: string, ms: OutboundMessage[]) => {
      for (const m of ms) dlq.push({ origin: m.headers!['x-dlq-origin']!, error: m.headers!['x-dlq-error']! });
    },
  } as unknown as MessageBus;
  const counts: Partial<Record<MessageOutcome, number>> = {};
  const metrics: WorkerMetrics = {
    messages: (_k, outcome, n = 1) => void (counts[outcome] = (counts[outcome] ?? 0) + n),
    applyDuration: () => undefined,
    webhookAttempt: () => undefined,
    webhookBreaker: () => undefined,
    webhookListenLost: () => undefined,
    webhookLeaseRenewalFailed: () => undefined,
    inboundChunk: () => undefined,
    pruned: () => undefined,
  };
  const attempts = new Map<string, number>();
  const applied: string[] = [];
  const reported: string[] = [];
  const kind: WorkerKind = {
    name: 'unit',
    groupId: 'unit',
    topics: () => [{ topic: 'work', partitions: 1 }],
    async apply(m) {
      const attempt = (attempts.get(m.offset) ?? 0) + 1;
      attempts.set(m.offset, attempt);
      await apply(m, attempt);
      applied.push(m.offset);
    },
    async onDeadLetter(m) {
      await options.onDeadLetter?.(m);
      reported.push(m.offset);
    },
  };
  const config = { workers: { applyConcurrency: options.concurrency ?? 2, bufferBytes: 1 << 20 } } as Config;
  const deps = { config, logger: createLogger('silent', 'unit'), pool: {} as Pool, bus, metrics };
  const running = await runWorkerKind({
    kind,
    group,
    deps,
    messageRetry: options.schedule ?? { attempts: 3, baseMs: 1, maxMs: 2 },
  });
  return {
    deliver: (ms: InboundMessage[]) => feed!.deliver(ms),
    stop: () => running.stop(),
    attemptsOf: (offset: number) => attempts.get(String(offset)) ?? 0,
    applied,
    reported,
    dlq,
    commits,
    counts,
  };
}

describe('consumer loop: applying', () => {
  it('applies every message once, each key in order, and commits past them on stop', async () => {
    const h = await harness(() => undefined);
    h.deliver([message(0, 'a'), message(1, 'b'), message(2, 'a'), message(3, 'b')]);
    await until(() => h.applied.length === 4, 'applies');
    expect(h.applied.indexOf('0')).toBeLessThan(h.applied.indexOf('2'));
    expect(h.applied.indexOf('1')).toBeLessThan(h.applied.indexOf('3'));
    await h.stop();
    expect(h.commits.at(-1)).toEqual({ topic: 'work', partition: 0, offset: '4' });
    expect(h.counts).toEqual({ applied: 4 });
  });

  it('applies WORKER_APPLY_CONCURRENCY messages of different keys at once', async () => {
    let inFlight = 0;
    let most = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const h = await harness(
      async () => {
        most = Math.max(most, ++inFlight);
        await gate;
        inFlight--;
      },
      { concurrency: 3 },
    );
    h.deliver([0, 1, 2, 3, 4].map((o) => message(o)));
    await until(() => most === 3, 'three at once');
    release();
    await until(() => h.applied.length === 5, 'all applied');
    expect(most).toBe(3);
  });

  it('lets a message wait for its edge record holding only its key; commits stop before it', async () => {
    let recordThere = false;
    const h = await harness((m) => {
      if (m.offset === '0' && !recordThere) throw new EdgeRecordPending('job 0');
    });
    h.deliver([message(0, 'job'), message(1, 'job'), message(2, 'other'), message(3, 'more')]);
    await until(() => h.applied.length === 2, 'the other keys');
    expect(h.applied.sort()).toEqual(['2', '3']);
    expect(h.attemptsOf(1)).toBe(0); // behind the waiting message of its key
    await until(() => h.attemptsOf(0) >= 3, 'a few tries');
    recordThere = true;
    await until(() => h.applied.length === 4, 'the waiting key');
    expect(h.applied.slice(2)).toEqual(['0', '1']);
    expect(h.counts.failed_attempt).toBeUndefined(); // waiting is not failing
    await h.stop();
  });
});

describe('consumer loop: a message of a newer release (issue 52)', () => {
  const jobV2 = JSON.stringify({
    type: 'jobs.create',
    version: 2,
    tenantId: '8a5c3f57-6b1e-4c35-9a2f-0c1d2e3f4a5b',
    clientId: '8a5c3f57-6b1e-4c35-9a2f-0c1d2e3f4a5c',
    producedAt: new Date().toISOString(),
    requestId: null,
    correlationId: null,
    payload: { anything: 'new' },
  });

  it('is decoded as NewerMessageVersion, not as a poison message', () => {
    const err = (() => {
      try {
        decodeJson(jobV2, jobMessageSchema, 'message value');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NewerMessageVersion);
    expect(err).toMatchObject({ version: 2, readable: 1 });
    // An older or garbled version stays a poison message.
    expect(() => decodeJson(jobV2.replace('"version":2', '"version":0'), jobMessageSchema, 'v')).toThrow(
      PermanentMessageError,
    );
    expect(() => decodeJson(jobV2.replace('jobs.create', 'jobs.other'), jobMessageSchema, 'v')).toThrow(
      PermanentMessageError,
    );
    expect(() => decodeJson(jobV2.replace('"version":2', '"version":"2"'), jobMessageSchema, 'v')).toThrow(
      PermanentMessageError,
    );
  });

  it('waits holding only its key, never dead-lettered, until a worker that reads it applies it', async () => {
    let reads = false;
    const h = await harness((m) => {
      if (m.offset === '0' && !reads) decodeJson(jobV2, jobMessageSchema, 'message value');
    });
    h.deliver([message(0, 'job'), message(1, 'job'), message(2, 'other')]);
    await until(() => h.applied.length === 1 && h.attemptsOf(0) >= 3, 'the other key, and a few tries');
    expect(h.applied).toEqual(['2']);
    expect(h.attemptsOf(1)).toBe(0);
    expect(h.dlq).toEqual([]);
    reads = true; // the partition's next owner reads version 2
    await until(() => h.applied.length === 3, 'the waiting key');
    expect(h.counts.failed_attempt).toBeUndefined();
    expect(h.counts.dead_lettered).toBeUndefined();
    await h.stop();
  });
});

describe('consumer loop: failures', () => {
  it.each([
    ['a PermanentMessageError', () => new PermanentMessageError('undecodable')],
    ['a data error PostgreSQL refuses (22P02)', () => pgError('22P02')],
  ])('dead-letters %s after one attempt, reports it, and applies the rest', async (_, error) => {
    const h = await harness((m) => {
      if (m.offset === '1') throw error();
    });
    h.deliver([message(0), message(1), message(2)]);
    await until(() => h.applied.length === 2 && h.reported.length === 1, 'settled');
    expect(h.attemptsOf(1)).toBe(1);
    expect(h.dlq).toEqual([{ origin: 'work/0/1', error: expect.any(String) }]);
    expect(h.counts).toEqual({ applied: 2, failed_attempt: 1, dead_lettered: 1 });
    await h.stop();
    expect(h.commits.at(-1)!.offset).toBe('3');
  });

  it('retries a transient failure with backoff, then dead-letters it once its attempts are used up', async () => {
    const h = await harness((m) => {
      if (m.offset === '0') throw pgError('40P01');
    });
    h.deliver([message(0, 'k'), message(1, 'k'), message(2)]);
    await until(() => h.dlq.length === 1 && h.applied.length === 2, 'settled');
    expect(h.attemptsOf(0)).toBe(3);
    expect(h.applied).toEqual(['2', '1']); // 2 went past; 1 waited behind its key
  });

  it('applies a message that succeeds on a retry once', async () => {
    const h = await harness((m, attempt) => {
      if (m.offset === '0' && attempt < 3) throw pgError('40001');
    });
    h.deliver([message(0)]);
    await until(() => h.applied.length === 1, 'applied');
    expect(h.counts).toEqual({ applied: 1, failed_attempt: 2 });
    expect(h.dlq).toEqual([]);
  });

  it('waits out an unreachable database without using attempts up, then applies everything', async () => {
    let down = 5;
    const h = await harness(
      () => {
        if (down > 0) {
          down--;
          throw refused();
        }
      },
      { schedule: { attempts: 1, baseMs: 1, maxMs: 1 } },
    );
    h.deliver([message(0), message(1)]);
    await until(() => h.applied.length === 2, 'applied after the outage');
    expect(h.dlq).toEqual([]);
  });

  it('while PostgreSQL is away, tries no other key before the backoff has passed', async () => {
    let down = 1;
    const h = await harness(
      (m) => {
        if (m.key === 'a' && down > 0) {
          down--;
          throw refused();
        }
      },
      { concurrency: 1 },
    );
    h.deliver([message(0, 'a'), message(1, 'b')]);
    await until(() => h.applied.length === 2, 'both applied');
    // Holding only its key would have applied b while a waited.
    expect(h.applied).toEqual(['0', '1']);
    await h.stop();
  });

  it('retries reporting a dead-lettered message while PostgreSQL is unreachable', async () => {
    let reportFailures = 2;
    const h = await harness(
      () => {
        throw new PermanentMessageError('poison');
      },
      {
        onDeadLetter: () => {
          if (reportFailures-- > 0) throw refused();
        },
      },
    );
    h.deliver([message(0)]);
    await until(() => h.reported.length === 1, 'reported');
    expect(h.dlq).toHaveLength(1);
  });

  it('on stop, waits for the applies under way and commits nothing past an unapplied message', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const h = await harness(
      async (m) => {
        if (m.offset === '1') await gate;
        if (m.offset === '2') throw pgError('40P01');
      },
      { schedule: { attempts: 5, baseMs: 3_600_000, maxMs: 3_600_000 } },
    );
    h.deliver([message(0), message(1), message(2), message(3)]);
    await until(() => h.applied.includes('0') && h.applied.includes('3') && h.attemptsOf(2) === 1, 'started');
    const stopped = h.stop();
    release();
    await stopped;
    expect(h.applied.sort()).toEqual(['0', '1', '3']);
    expect(h.commits.at(-1)!.offset).toBe('2'); // 2 waits out a backoff: the next owner applies it
  });
});
