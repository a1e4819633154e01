import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { MessageBus } from '../../src/shared/kafka/bus.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { chunkMessage } from '../support/chunk-messages.js';
import { bearer } from '../support/fixtures.js';
import { eventually, testBus } from '../support/kafka.js';
import { parseSamples, valueOf } from '../support/prometheus-text.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// Issue 24, finding 2: a message waiting for its edge record must cost its own key, nothing
// else. An orphan chunk (a gateway SIGKILLed between Kafka's acknowledgement and its edge commit:
// here, a chunk of an import job that does not exist, produced now) goes into partition 0 of
// both inbound topics; then a load of real imports goes through the gateway. The worker waits
// ORPHAN_GRACE_MS for the orphan's job. Asserted: every real import completes while the orphan
// still waits (the workers' worker_inbound_chunks_total{outcome="orphan"} still 0 after the
// database showed all complete), partition 0's own jobs included; then the orphans are skipped
// and counted, and the group's committed offsets pass them (lag 0). Printed: chunks applied
// during the wait, per partition.

const graceMs = scaled(30_000);
const partitions = 6;
const suite = useGatewaySuite({
  env: () => ({
    KAFKA_TOPIC_PARTITIONS: String(partitions),
    ORPHAN_GRACE_MS: String(graceMs),
    RATE_LIMIT_PER_MINUTE: '100000',
    UPLOAD_BYTES_PER_SECOND: String(1024 * 1024 * 1024),
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: String(1024 * 1024 * 1024),
    INBOUND_CHUNK_MAX_BYTES: '16384', // about 40 targets a chunk: several chunks per job
    WORKER_HTTP_HOST: '127.0.0.1',
    WORKER_HTTP_PORT: '0',
  }),
});
const batches = 40;
const targetsPerBatch = 250;
const singles = 8; // one target each: the express lane

// The partition kafkajs's default partitioner (the one our producer uses) gives a key.
const murmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2') as (
  key: string,
) => number;
const partitionOf = (key: string) => (murmur2(key) & 0x7fffffff) % partitions;

let workers: RunningWorkers | undefined;
let bus: MessageBus | undefined;
afterAll(async () => {
  await workers?.stop();
  await bus?.close();
});

describe('orphan isolation (issue 24, finding 2)', () => {
  it(
    'an orphan waiting for its edge record holds only its own key: every other import completes meanwhile',
    async () => {
      const config = suite.config;
      const { inboundTargets, inboundTargetsExpress } = topicNames(config.kafka);
      const topics = [inboundTargets, inboundTargetsExpress];
      // Each topic's group: the bulk kind's and the express kind's.
      const groups = [inboundWorker, inboundExpressWorker].map((kind) => ({
        groupId: `${config.kafka.topicPrefix}${kind.groupId}`,
        topics: kind.topics(config.kafka).map((t) => t.topic),
      }));
      const sink = new Writable({ write: (_chunk, _enc, done) => done() });
      let metricsUrl = '';
      workers = await startWorkers({
        config,
        logger: createLogger('warn', 'orphan-workers', sink),
        kinds: [inboundWorker, inboundExpressWorker],
        serve: { onListening: (url) => (metricsUrl = url) },
      });
      bus = testBus();
      const orphansSkipped = async () => {
        const res = await fetch(`${metricsUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
        return valueOf(parseSamples(await res.text()), 'worker_inbound_chunks_total', { outcome: 'orphan' }) ?? 0;
      };
      const api = (path: string, body: unknown) =>
        suite.api.post(path, { headers: bearer(suite.demo.clients.all!.apiKey), body });

      // Warm-up: the group has joined and applies.
      const warm = await api('/api/v1/inbound/targets', { sourceSystem: 'warm', ...makeTargets(1, 'warm')[0] });
      expect(warm.status).toBe(200);
      await eventually(
        async () =>
          (
            await suite.pool.query(`SELECT 1 FROM import_jobs WHERE id = $1 AND status = 'Completed'`, [
              warm.body.importJobId,
            ])
          ).rowCount === 1
            ? true
            : undefined,
        60_000,
        'the warm-up import',
      );

      // The orphans: a job id that does not exist, whose key lands on partition 0.
      let orphanJobId = 1_000_000_000;
      while (partitionOf(String(orphanJobId)) !== 0) orphanJobId++;
      // Partition 0 of each topic gets it (checks partitionOf against the broker). The ping
      // loads the cluster's metadata first, without which the lag's offset fetch finds no broker.
      await bus.ping(10_000);
      const messagesIn = async () =>
        new Map((await bus!.consumerLag('nobody', topics, 10_000)).map((l) => [`${l.topic}/${l.partition}`, l.lag]));
      const before = await messagesIn();
      const orphanProducedAt = Date.now();
      const orphan = chunkMessage(
        {
          tenantId: suite.demo.tenantId,
          clientId: suite.demo.clients.all!.clientId,
          requestId: null,
          correlationId: null,
        },
        { importJobId: String(orphanJobId), sourceSystem: 'orphan', chunkIndex: 0, chunkCount: 1 },
        [{ index: 0, target: makeTargets(1, 'orphan')[0]! }],
      );
      for (const topic of topics) await bus.produce(topic, [orphan]);
      const added = [...(await messagesIn())].filter(([id, n]) => n !== before.get(id)).map(([id]) => id);
      expect(added.sort()).toEqual(topics.map((t) => `${t}/0`).sort());

      // The load: bulk batches and single targets, through the gateway.
      const jobs: number[] = [];
      for (let b = 0; b < batches; b++) {
        const res = await api('/api/v1/inbound/targets/batch', {
          sourceSystem: 'load',
          externalBatchId: `load-${b}`,
          targets: makeTargets(targetsPerBatch, `load-${b}`, b + 1),
        });
        expect(res.status).toBe(200);
        jobs.push(res.body.importJobId as number);
        if (b % (batches / singles) === 0) {
          const single = await api('/api/v1/inbound/targets', {
            sourceSystem: 'single',
            ...makeTargets(1, `single-${b}`, b + 1)[0],
          });
          expect(single.status).toBe(200);
          jobs.push(single.body.importJobId as number);
        }
      }
      expect(jobs.filter((id) => partitionOf(String(id)) === 0).length).toBeGreaterThan(0);

      // Until every job is complete or an orphan was skipped. The database first, the metric
      // after: all complete at t1 and no orphan skipped at t2 > t1 means they completed first.
      const seen = await eventually(
        async () => {
          const { rows } = await suite.pool.query(
            `SELECT count(*) FILTER (WHERE status = 'Completed')::int AS completed FROM import_jobs WHERE id = ANY($1::bigint[])`,
            [jobs],
          );
          const skipped = await orphansSkipped();
          return rows[0].completed === jobs.length || skipped > 0
            ? { completed: rows[0].completed, skipped }
            : undefined;
        },
        graceMs + 120_000,
        'every import complete or an orphan skipped',
      );

      // Chunks applied since the orphan was produced, per topic and partition.
      const { rows: applied } = await suite.pool.query(
        `SELECT j.id::int AS id, j.kind, count(c.*)::int AS chunks
           FROM import_jobs j JOIN import_job_chunks c ON c.import_job_id = j.id
          WHERE j.id = ANY($1::bigint[]) AND c.done_at >= $2
          GROUP BY j.id, j.kind`,
        [jobs, new Date(orphanProducedAt)],
      );
      const perPartition: Record<string, number[]> = {
        bulk: Array(partitions).fill(0),
        express: Array(partitions).fill(0),
      };
      for (const r of applied)
        perPartition[r.kind === 'Single' ? 'express' : 'bulk']![partitionOf(String(r.id))] += r.chunks;
      console.log(
        `orphan isolation: ${seen.completed}/${jobs.length} imports completed with ${seen.skipped} orphans skipped ` +
          `(grace ${graceMs} ms); chunks applied since the orphans were produced, per partition 0-${partitions - 1}: ` +
          `bulk ${JSON.stringify(perPartition.bulk)}, express ${JSON.stringify(perPartition.express)}`,
      );
      expect(seen).toEqual({ completed: jobs.length, skipped: 0 });
      // The orphans' partition went on too (they came before all of its load).
      expect(perPartition.bulk![0]).toBeGreaterThan(0);

      // Then the orphans are skipped and counted, and the committed offsets move past them.
      await eventually(
        async () => ((await orphansSkipped()) >= 2 ? true : undefined),
        graceMs + 60_000,
        'orphans skipped',
      );
      expect(await orphansSkipped()).toBe(2);
      await eventually(
        async () => {
          const lags = await Promise.all(groups.map((g) => bus!.consumerLag(g.groupId, g.topics, 10_000)));
          return lags.flat().every((l) => l.lag === 0) ? true : undefined;
        },
        60_000,
        'consumer lag 0',
      );
      const { rows: orphanJob } = await suite.pool.query(`SELECT 1 FROM import_jobs WHERE id = $1`, [orphanJobId]);
      expect(orphanJob).toHaveLength(0);
    },
    scaled(600_000),
  );
});
