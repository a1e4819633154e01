import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { admin, bearer, createClientWithKey } from '../support/fixtures.js';
import { eventually, testBus } from '../support/kafka.js';
import { spawnWorkers, type WorkerProcess } from '../support/processes.js';
import { parseSamples, samplesOf, valueOf, type Sample } from '../support/prometheus-text.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// A real worker process (inbound and the webhook dispatcher) serving /metrics on an ephemeral
// port: known work goes through the gateway and Kafka, one poison message straight to the topic;
// the scrape must count exactly what happened.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true'; // the receiver is on 127.0.0.1 (admin CLI check)

// Small chunks: each batch becomes several Kafka messages.
const suite = useGatewaySuite({ env: () => ({ INBOUND_CHUNK_MAX_BYTES: '4096' }) });
const jobs = 3;
const targetsPerJob = 40;
let receiver: WebhookReceiver;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill('SIGKILL')));
  await receiver?.close();
});

/** The URL the runner printed (`workers: metrics on <url>`), once it has. */
const metricsUrl = (worker: WorkerProcess) =>
  eventually(() => /workers: metrics on (http:\/\/[^\s"]+)/.exec(worker.output())?.[1], 60_000, 'the metrics URL');

const scrape = async (url: string): Promise<Sample[]> => {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  return parseSamples(await res.text());
};

describe('worker /metrics, /livez, /readyz', () => {
  it('counts applied chunks, a dead-lettered message, lag, import jobs and webhook attempts exactly', async () => {
    const client = await createClientWithKey(suite.pool, suite.demo.tenantId, 'inbound.targets.batch.write');
    const path = `/hook/${randomUUID()}`;
    await admin(suite.pool, webhookCreate, [
      '--client',
      client.clientId,
      '--url',
      receiver.url(path),
      '--events',
      'import_job.completed',
    ]);
    receiver.behave(path, (n) => (n === 1 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' }));

    const worker = spawnWorkers(suite.config, 'inbound,webhooks', {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_RETRY_SCHEDULE: '0.2,0.2',
    });
    workers.push(worker);
    const url = await metricsUrl(worker);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await worker.running();

    for (let j = 0; j < jobs; j++) {
      const res = await suite.api.post('/api/v1/inbound/targets/batch', {
        headers: bearer(client.apiKey),
        body: { sourceSystem: 'metrics', externalBatchId: `m-${j}`, targets: makeTargets(targetsPerJob, `m${j}`) },
      });
      expect(res.status).toBe(200);
    }
    // Undecodable: dead-lettered at once, no import job to mark.
    const bus = testBus();
    try {
      await bus.produce(topicNames(suite.config.kafka).inboundTargets, [{ key: 'poison', value: 'not json' }]);
    } finally {
      await bus.close();
    }

    const { rows } = await suite.pool.query(`SELECT sum(chunk_count)::int AS chunks FROM import_jobs`);
    const chunks = rows[0].chunks as number;
    expect(chunks).toBeGreaterThan(jobs); // several chunks per job

    const group = `${suite.config.kafka.topicPrefix}inbound`;
    const inbound = { kind: 'inbound' };
    const s = await eventually(
      async () => {
        const samples = await scrape(url);
        const lag = samplesOf(samples, 'kafka_consumer_lag', { group });
        // The bulk topic's partitions (the batches here are more than INBOUND_EXPRESS_MAX_TARGETS).
        const done =
          valueOf(samples, 'worker_messages_total', { ...inbound, outcome: 'applied' }) === chunks &&
          valueOf(samples, 'worker_messages_total', { ...inbound, outcome: 'dead_lettered' }) === 1 &&
          valueOf(samples, 'import_jobs', { status: 'Queued' }) === 0 &&
          valueOf(samples, 'import_jobs', { status: 'Processing' }) === 0 &&
          valueOf(samples, 'webhook_deliveries_total', { outcome: 'succeeded' }) === jobs &&
          lag.length === suite.config.kafka.topicPartitions &&
          lag.every((l) => l.value === 0);
        return done ? samples : undefined;
      },
      120_000,
      'every chunk applied, the poison dead-lettered, offsets committed, webhooks delivered',
    );

    expect(valueOf(s, 'worker_messages_total', { ...inbound, outcome: 'applied' })).toBe(chunks);
    expect(valueOf(s, 'worker_messages_total', { ...inbound, outcome: 'failed_attempt' })).toBe(1);
    expect(valueOf(s, 'worker_messages_total', { ...inbound, outcome: 'dead_lettered' })).toBe(1);
    // New targets throughout: every chunk COPYd straight into targets.
    expect(
      Object.fromEntries(samplesOf(s, 'worker_inbound_chunks_total').map((x) => [x.labels.outcome, x.value])),
    ).toEqual({ copied: chunks, upserted: 0, duplicate: 0, orphan: 0 });
    // The retention pruner runs in every worker process; nothing here is past its retention.
    expect(valueOf(s, 'retention_pruned_total', { table: 'import_jobs' })).toBe(0);
    expect(valueOf(s, 'retention_limit_seconds', { table: 'import_jobs' })).toBe(90 * 86_400);
    // The jobs just finished: the oldest finished minutes ago at most, far inside the retention.
    expect(valueOf(s, 'retention_oldest_age_seconds', { table: 'import_jobs' })).toBeGreaterThanOrEqual(0);
    expect(valueOf(s, 'retention_oldest_age_seconds', { table: 'import_jobs' })).toBeLessThan(86_400);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'retention_oldest_age_seconds' })).toBe(0);
    // No operator replayed or purged a dead letter: nothing of theirs to keep or prune.
    expect(valueOf(s, 'retention_limit_seconds', { table: 'dead_letter_actions' })).toBe(90 * 86_400);
    expect(valueOf(s, 'retention_oldest_age_seconds', { table: 'dead_letter_actions' })).toBe(0);
    for (const table of ['dead_letter_actions', 'dead_letters_handled'])
      expect(valueOf(s, 'retention_pruned_total', { table })).toBe(0);
    const applyCalls = valueOf(s, 'worker_apply_duration_seconds_count', inbound)!;
    expect(applyCalls).toBeGreaterThanOrEqual(1);
    expect(applyCalls).toBeLessThanOrEqual(chunks);
    const { inboundTargets, inboundTargetsExpress } = topicNames(suite.config.kafka);
    for (const l of samplesOf(s, 'kafka_consumer_lag', { group })) {
      expect([inboundTargets, inboundTargetsExpress]).toContain(l.labels.topic);
      expect(l.value).toBe(0);
    }
    // Only the jobs not finished are counted (none now); all of them, PostgreSQL's estimate (NaN
    // until autovacuum or ANALYZE has seen the table, as in a fresh test database).
    expect(Object.fromEntries(samplesOf(s, 'import_jobs').map((x) => [x.labels.status, x.value]))).toEqual({
      Queued: 0,
      Processing: 0,
    });
    expect(samplesOf(s, 'import_jobs_estimated_rows')).toHaveLength(1);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'import_jobs_estimated_rows' })).toBe(0);
    // One event's first attempt got a 500 and was retried; every event was delivered.
    expect(valueOf(s, 'webhook_deliveries_total', { outcome: 'succeeded' })).toBe(jobs);
    expect(valueOf(s, 'webhook_deliveries_total', { outcome: 'retry_scheduled' })).toBe(1);
    expect(valueOf(s, 'webhook_deliveries_total', { outcome: 'gave_up' })).toBe(0);
    expect(valueOf(s, 'webhook_queue_depth')).toBe(0);
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'import_jobs' })).toBe(0);
    // The poison waits in its dead-letter topic; the express kind's is another process's to report.
    expect(valueOf(s, 'connect_dead_letters', { topic: `${inboundTargets}.dlq` })).toBe(1);
    expect(valueOf(s, 'connect_dead_letters', { topic: `${inboundTargetsExpress}.dlq` })).toBeUndefined();
    expect(valueOf(s, 'worker_scrape_query_errors_total', { metric: 'connect_dead_letters' })).toBe(0);
    expect(samplesOf(s, 'process_resident_memory_bytes')).toHaveLength(1);

    const live = await fetch(`${url}/livez`);
    expect(live.status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      state: 'running',
      checks: { postgres: { status: 'Up' }, kafka: { status: 'Up' } },
    });

    // On SIGTERM the process stops cleanly, and its endpoints with it.
    expect(await worker.kill('SIGTERM')).toBe(0);
    await expect(fetch(`${url}/livez`)).rejects.toThrow();
  });

  it('answers /livez while it waits for a broker that is down, and /readyz 503', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const worker = spawnWorkers(suite.config, 'inbound', { KAFKA_BROKERS: `127.0.0.1:${closedPort}` });
    workers.push(worker);
    const url = await metricsUrl(worker);
    await eventually(() => (/kafka unreachable at start/.test(worker.output()) ? true : undefined), 60_000, 'a wait');

    expect((await fetch(`${url}/livez`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({
      ready: false,
      state: 'starting',
      checks: { kafka: { status: 'Down' } },
    });
    expect(worker.output()).not.toContain('workers: running');
    await worker.kill('SIGKILL');
  });
});
