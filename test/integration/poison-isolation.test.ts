import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { InboundMessage, MessageBus } from '../../src/shared/kafka/bus.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import type { TargetFields } from '../../src/shared/inbound/target-schema.js';
import { chunkMessage } from '../support/chunk-messages.js';
import { schedules } from '../../src/shared/retry.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { deadLetterTopic } from '../../src/shared/dead-letters/headers.js';
import { bearer, createDemo, insertImportJob } from '../support/fixtures.js';
import { eventually, testBus, uniqueName, reading } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// Issue 12: one tenant's poison must not hold up another tenant's imports. Tenant A's messages
// carry data PostgreSQL refuses (SQLSTATE 22003, an int column out of range: the inbound worker
// leaves type checks to PostgreSQL); tenant B pushes good targets through the gateway onto the
// same partition (the topic has one). The workers run the production retry policy, so every
// retry of a poison message would cost B its backoff. Measured, printed, never asserted: B's
// apply latency (import job created_at → completed_at) without and with poison. Asserted: exact
// outcomes, and that no poison message was attempted more than once (failed attempts are the
// worker's "worker attempt failed" log lines, each naming the message it failed on).
const suite = useGatewaySuite({ env: () => ({ KAFKA_TOPIC_PARTITIONS: '1', RATE_LIMIT_PER_MINUTE: '100000' }) });
const poisonCount = 12;

const logLines: Record<string, any>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
    done();
  },
});
let workers: RunningWorkers | undefined;
let bus: MessageBus | undefined;
const dlqReader: { stop: () => Promise<void> } = { stop: async () => undefined };
afterAll(async () => {
  await dlqReader.stop();
  await workers?.stop();
  await bus?.close();
});

type Latency = { importJobId: number; ms: number };

async function pushB(i: number, round: string): Promise<number> {
  const [target] = makeTargets(1, `${round}-${i}`, i + 1);
  const res = await suite.api.post('/api/v1/inbound/targets', {
    headers: bearer(suite.demo.clients.all!.apiKey),
    body: { sourceSystem: 'tenant-b', ...target },
  });
  expect(res.status).toBe(200);
  return res.body.importJobId as number;
}

/** Waits until every job is final; returns each one's apply latency as PostgreSQL recorded it. */
async function untilFinal(ids: number[], what: string): Promise<Latency[]> {
  return eventually(
    async () => {
      const { rows } = await suite.pool.query(
        `SELECT id::int AS id, status,
                (extract(epoch FROM completed_at - created_at) * 1000)::float8 AS ms
           FROM import_jobs WHERE id = ANY($1::bigint[])`,
        [ids],
      );
      if (rows.length !== ids.length || rows.some((r) => r.status === 'Queued' || r.status === 'Processing'))
        return undefined;
      return rows.map((r) => ({ importJobId: r.id, ms: Math.round(r.ms) }));
    },
    300_000,
    what,
  );
}

const summary = (latencies: Latency[]) => {
  const ms = latencies.map((l) => l.ms).sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)]!, max: ms.at(-1)! };
};

describe('poison isolation (issue 12)', () => {
  it(
    "dead-letters another tenant's poison at once: each poison attempted once, every good message applied once",
    async () => {
      const config = suite.config;
      const topic = topicNames(config.kafka).inboundTargets;
      workers = await startWorkers({
        config,
        logger: createLogger('info', 'poison-workers', sink),
        kinds: [inboundWorker, inboundExpressWorker],
        messageRetry: { ...schedules.messageRetry },
      });
      bus = testBus();
      const dlq: InboundMessage[] = [];
      const reader = bus.consumerGroup(uniqueName('dlq-reader'));
      await reader.run(
        [deadLetterTopic(topic)],
        reading((messages) => void dlq.push(...messages)),
      );
      dlqReader.stop = () => reader.stop();

      // Warm-up: the group has joined and applies.
      await untilFinal([await pushB(0, 'warm')], 'warm-up import');

      // Without poison.
      const calm: number[] = [];
      for (let i = 0; i < poisonCount; i++) calm.push(await pushB(i, 'calm'));
      const calmLatency = await untilFinal(calm, "tenant B's imports without poison");

      // With poison: A's poison and B's good pushes alternate on the one partition.
      const tenantA = await createDemo(suite.pool);
      const callerA = { tenantId: tenantA.tenantId, clientId: tenantA.clients.all!.clientId };
      const poisonJobs: number[] = [];
      const stormy: number[] = [];
      for (let i = 0; i < poisonCount; i++) {
        const importJobId = await insertImportJob(suite.pool, callerA);
        poisonJobs.push(importJobId);
        const [target] = makeTargets(1, `poison-${i}`, 100 + i);
        const message = chunkMessage(
          { ...callerA, requestId: null, correlationId: null },
          { importJobId: String(importJobId), sourceSystem: 'fixture', chunkIndex: 0, chunkCount: 1 },
          // Well-formed chunk; the int column refuses the value (SQLSTATE 22003).
          [{ index: 0, target: { ...target!, serviceDurationMinutes: 1e12 } as TargetFields }],
        );
        await bus.produce(topic, [message]);
        stormy.push(await pushB(i, 'stormy'));
      }
      const stormyLatency = await untilFinal(stormy, "tenant B's imports with poison");
      await untilFinal(poisonJobs, "tenant A's poison jobs final");
      await eventually(() => (dlq.length >= poisonCount ? true : undefined), 60_000, 'every poison dead-lettered');

      const failedAttempts = logLines.filter((l) => l.msg === 'worker attempt failed');
      console.log(
        `poison isolation: tenant B apply latency (ms) without poison ${JSON.stringify(summary(calmLatency))}, ` +
          `with ${poisonCount} poison messages of tenant A ${JSON.stringify(summary(stormyLatency))}; ` +
          `failed attempts logged: ${failedAttempts.length}`,
      );

      // Every poison dead-lettered once, with the error and its origin.
      expect(dlq).toHaveLength(poisonCount);
      const dlqJobs = dlq.map((m) => Number(JSON.parse(m.value!.toString().split('\n')[0]!).payload.importJobId));
      expect(dlqJobs.sort((a, b) => a - b)).toEqual([...poisonJobs].sort((a, b) => a - b));
      for (const m of dlq) {
        expect(m.headers['x-dlq-error']).toMatch(/out of range for type integer/);
        expect(m.headers['x-dlq-worker']).toBe('inbound');
      }
      const poisonOrigins = dlq.map((m) => m.headers['x-dlq-origin']!);
      expect(new Set(poisonOrigins).size).toBe(poisonCount);

      // No poison attempted more than once; no other attempt failed (no batch around a poison).
      const attemptsOf = (origin: string) =>
        failedAttempts.filter((l) => l.origin === origin || `${topic}/0/${l.what?.replace(/^message /, '')}` === origin)
          .length;
      expect(Object.fromEntries(poisonOrigins.map((o) => [o, attemptsOf(o)]))).toEqual(
        Object.fromEntries(poisonOrigins.map((o) => [o, 1])),
      );
      expect(failedAttempts.filter((l) => !poisonOrigins.includes(l.origin))).toEqual([]);

      // Each poison's job is Failed with the reason; none of its targets exists.
      const { rows: aJobs } = await suite.pool.query(
        `SELECT status, applied_count, failed_count, chunks_done, failure_reason, errors
           FROM import_jobs WHERE id = ANY($1::bigint[])`,
        [poisonJobs],
      );
      expect(aJobs).toHaveLength(poisonCount);
      for (const job of aJobs) {
        expect(job).toMatchObject({ status: 'Failed', applied_count: 0, failed_count: 1, chunks_done: 1 });
        expect(job.failure_reason).toMatch(/out of range for type integer/);
        expect(job.errors[0].message).toMatch(/could not be applied: .*out of range/);
      }
      const { rows: aTargets } = await suite.pool.query(`SELECT count(*)::int AS n FROM targets WHERE tenant_id = $1`, [
        tenantA.tenantId,
      ]);
      expect(aTargets[0].n).toBe(0);

      // Every good message applied exactly once.
      const bJobs = [...calm, ...stormy];
      const { rows: bRows } = await suite.pool.query(
        `SELECT j.status, j.applied_count, j.failed_count, j.chunks_done,
                (SELECT count(*)::int FROM import_job_chunks c WHERE c.import_job_id = j.id) AS ledger
           FROM import_jobs j WHERE j.id = ANY($1::bigint[])`,
        [bJobs],
      );
      expect(bRows).toHaveLength(2 * poisonCount);
      for (const job of bRows)
        expect(job).toEqual({ status: 'Completed', applied_count: 1, failed_count: 0, chunks_done: 1, ledger: 1 });
      const { rows: bTargets } = await suite.pool.query(
        `SELECT count(*)::int AS n FROM targets WHERE tenant_id = $1 AND source_system = 'tenant-b'
            AND (external_id LIKE 'calm-%' OR external_id LIKE 'stormy-%')`,
        [suite.demo.tenantId],
      );
      expect(bTargets[0].n).toBe(2 * poisonCount);
    },
    scaled(600_000),
  );
});
