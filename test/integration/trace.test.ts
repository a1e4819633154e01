import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import type { Trace } from '../../src/admin/trace/trace.js';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import type { InboundMessage, MessageBus } from '../../src/shared/kafka/bus.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { startTracing } from '../../src/shared/tracing/tracing.js';
import { runAdminCli, type CliRun } from '../support/admin-cli.js';
import { admin, bearer, insertImportJob } from '../support/fixtures.js';
import { eventually, reading, testBus, uniqueName } from '../support/kafka.js';
import { spawnWorkers, type WorkerProcess } from '../support/processes.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// `admin trace` after real work: batches and a field job go through a gateway, Kafka and a worker
// process with its own WORKER_ID, a webhook receiver takes the events; the command must show each
// message where Kafka holds it (checked by reading the topics), who applied it and how, the
// request's trace id, and the events with their deliveries.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true'; // the receiver is on 127.0.0.1 (admin CLI check)
// The in-process gateway propagates traces as the gateway process does (server.ts starts tracing).
const tracing = startTracing('connect-test', { env: {} });

const suite = useGatewaySuite({ env: () => ({ INBOUND_CHUNK_MAX_BYTES: '4096', KAFKA_TOPIC_PARTITIONS: '3' }) });
const workerId = `trace-test-${randomBytes(3).toString('hex')}`;
let worker: WorkerProcess;
let receiver: WebhookReceiver;
let bus: MessageBus;
const seen = new Map<string, InboundMessage>(); // topic/partition@offset → the message Kafka holds there
let stopReader = async () => undefined as void;

const cli = (...args: string[]): Promise<CliRun> => runAdminCli(suite.db.url, ...args);

async function traceJson(kind: string, id: string): Promise<Trace> {
  const run = await cli('trace', kind, id, '--json');
  expect(run, `trace ${kind} ${id}`).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as Trace;
}

/** The chunk identity in a message the gateway produced (v2: the header line's JSON). */
const chunkOf = (m: InboundMessage) => {
  const header = JSON.parse(m.value!.toString('utf8').split('\n')[0]!) as {
    payload: { importJobId: string; chunkIndex: number };
  };
  return header.payload;
};

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  worker = spawnWorkers(suite.config, 'inbound,jobs,webhooks', {
    WORKER_ID: workerId,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '50',
  });
  await worker.running();
  bus = testBus();
  const topics = topicNames(suite.config.kafka);
  const reader = bus.consumerGroup(uniqueName('trace-reader'));
  await reader.run(
    [topics.inboundTargets, topics.inboundTargetsExpress, topics.jobs],
    reading((messages) => {
      for (const m of messages) seen.set(`${m.topic}/${m.partition}@${m.offset}`, m);
    }),
  );
  stopReader = () => reader.stop();
});
afterAll(async () => {
  await stopReader();
  await bus?.close();
  await worker?.kill('SIGKILL');
  await receiver?.close();
  await tracing.shutdown();
});

describe('admin trace', () => {
  it('shows an import job: each chunk at its partition and offset, when and by whom it was applied, its trace and webhook', async () => {
    const client = suite.demo.clients.all!;
    const path = `/hook/${randomUUID()}`;
    receiver.behave(path, () => ({ status: 200, body: 'ok' }));
    const endpoint = await admin(suite.pool, webhookCreate, [
      '--client',
      client.clientId,
      '--url',
      receiver.url(path),
      '--events',
      'import_job.completed,field_job.created',
    ]);
    const traceId = randomBytes(16).toString('hex');
    const targets = 60;
    const res = await suite.api.post('/api/v1/inbound/targets/batch', {
      headers: { ...bearer(client.apiKey), traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      body: { sourceSystem: 'trace', externalBatchId: 'TRACE-1', targets: makeTargets(targets, uniqueName('tr')) },
    });
    expect(res.status).toBe(200);
    const id = String(res.body.importJobId);

    // Done once the job is Completed and its webhook delivered.
    const t = await eventually(
      async () => {
        const now = await traceJson('import-job', id);
        return now.status === 'Completed' && now.webhooks[0]?.deliveries[0]?.status === 'Succeeded' ? now : undefined;
      },
      60_000,
      'the job completed and its webhook delivered',
    );
    expect(t.messages.length).toBe(t.importJob!.chunks.total);
    expect(t.messages.length).toBeGreaterThan(1);
    expect(t.importJob!.counts).toMatchObject({ received: targets, accepted: targets, applied: targets, failed: 0 });
    expect(t.traceIds).toEqual([traceId]);
    for (const m of t.messages) {
      expect(m).toMatchObject({ state: 'handled', handledBy: workerId, traceId, duplicateDeliveries: 0 });
      expect(['copied', 'upserted']).toContain(m.how);
      expect(Date.parse(m.producedAt!)).toBeLessThanOrEqual(Date.parse(m.handledAt!));
      // Kafka holds this very chunk at the position the ledger names.
      const held = await eventually(
        () => seen.get(`${m.topic}/${m.partition}@${m.offset}`),
        30_000,
        'the message read',
      );
      expect(held.key).toBe(id);
      expect(chunkOf(held)).toMatchObject({ importJobId: id, chunkIndex: m.chunk });
    }
    expect(t.messages.reduce((n, m) => n + m.items!.applied, 0)).toBe(targets);
    expect(t.webhooks).toEqual([
      expect.objectContaining({
        type: 'import_job.completed',
        deliveries: [
          expect.objectContaining({
            endpointId: endpoint.endpointId,
            url: receiver.url(path),
            status: 'Succeeded',
            attempts: 1,
          }),
        ],
      }),
    ]);

    // The report names the same facts.
    const text = await cli('trace', 'import-job', id);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toContain(`import-job ${id}: Completed`);
    expect(text.stdout).toContain(`trace ${traceId}`);
    expect(text.stdout).toContain(`messages (${t.messages.length} of ${t.messages.length} handled)`);
    for (const m of t.messages) expect(text.stdout).toContain(`${m.topic}/${m.partition}@${m.offset}`);
    expect(text.stdout).toContain(workerId);
    expect(text.stdout).toContain(`${t.webhooks[0]!.eventId} import_job.completed`);
    expect(text.stdout).toMatch(/Succeeded after 1 attempt/);
  });

  it('shows a dead-lettered chunk and a chunk delivered twice', async () => {
    const caller = { tenantId: suite.demo.tenantId, clientId: suite.demo.clients.all!.clientId };
    const ids = { ...caller, requestId: null, correlationId: null };
    const [a, b] = makeTargets(2, uniqueName('dl'));
    const items = [
      { index: 0, target: a! },
      { index: 1, target: b! },
    ];
    // Names 3 items, holds 2: refused for its data, dead-lettered at once.
    const poisoned = await insertImportJob(suite.pool, caller);
    const [wrong] = chunkMessages(String(poisoned), 'fixture', cutIntoChunks(items, 1 << 20), ids);
    const wrongValue = Buffer.from((wrong!.value as Buffer).toString().replace('"itemCount":2', '"itemCount":3'));
    // Sound, sent twice: applied once, then skipped.
    const twice = await insertImportJob(suite.pool, caller);
    const [good] = chunkMessages(String(twice), 'fixture', cutIntoChunks(items.slice(0, 1), 1 << 20), ids);
    const topic = topicNames(suite.config.kafka).inboundTargets;
    await bus.produce(topic, [{ ...wrong!, value: wrongValue }, good!]);
    await eventually(async () =>
      (await traceJson('import-job', String(twice))).status === 'Completed' ? true : undefined,
    );
    await bus.produce(topic, [good!]);

    const failed = await eventually(async () => {
      const now = await traceJson('import-job', String(poisoned));
      return now.status === 'Failed' ? now : undefined;
    });
    expect(failed.reason).toBe('chunk names 3 items but holds 2');
    expect(failed.messages).toEqual([
      expect.objectContaining({
        chunk: 0,
        state: 'handled',
        how: 'dead_lettered',
        handledBy: workerId,
        items: { applied: 0, failed: 3 },
      }),
    ]);
    expect(seen.size).toBeGreaterThan(0);
    const m = failed.messages[0]!;
    expect(chunkOf(await eventually(() => seen.get(`${m.topic}/${m.partition}@${m.offset}`)))).toMatchObject({
      importJobId: String(poisoned),
    });

    const again = await eventually(async () => {
      const now = await traceJson('import-job', String(twice));
      return now.messages[0]!.duplicateDeliveries === 1 ? now : undefined;
    });
    expect(again.messages[0]).toMatchObject({ how: expect.stringMatching(/^(copied|upserted)$/), handledBy: workerId });
    // The position is the first delivery's: the second came later in the same partition.
    const deliveries = [...seen.values()].filter((s) => s.topic === topic && s.key === String(twice));
    expect(deliveries).toHaveLength(2);
    expect(again.messages[0]!.offset).toBe(
      [...deliveries].sort((x, y) => Number(x.offset) - Number(y.offset))[0]!.offset,
    );
  });

  it('shows a field job: its one message, the worker that made it and its webhook', async () => {
    const client = suite.demo.clients.all!;
    const traceId = randomBytes(16).toString('hex');
    const res = await suite.api.post('/api/v1/connect/jobs', {
      headers: { ...bearer(client.apiKey), traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      body: {
        externalId: uniqueName('JOB'),
        title: 'Replace boiler pump',
        jobType: 'REPAIR',
        customer: { name: 'ACME Facilities' },
        site: { address: { line1: 'Hauptstraße 5', postalCode: '10115', city: 'Berlin', countryCode: 'DE' } },
      },
    });
    expect(res.status).toBe(201);
    const t = await eventually(async () => {
      const now = await traceJson('job', res.body.fieldJobId);
      return now.status === 'Materialized' && now.webhooks[0]?.deliveries[0]?.status === 'Succeeded' ? now : undefined;
    });
    expect(t.traceIds).toEqual([traceId]);
    expect(t.messages).toEqual([
      expect.objectContaining({ chunk: null, state: 'handled', how: 'applied', handledBy: workerId, traceId }),
    ]);
    const m = t.messages[0]!;
    expect(m.topic).toBe(topicNames(suite.config.kafka).jobs);
    const held = await eventually(() => seen.get(`${m.topic}/${m.partition}@${m.offset}`));
    expect(held.value!.toString()).toContain(res.body.fieldJobId);
    expect(t.webhooks.map((e) => e.type)).toEqual(['field_job.created']);
  });

  it('refuses what it cannot trace', async () => {
    expect(await cli('trace', 'import-job', '999999999')).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'admin: no import-job 999999999\n',
    });
    expect((await cli('trace', 'import-job', 'abc')).code).toBe(1);
    expect((await cli('trace', 'appointment', 'apr_nope')).code).toBe(1);
    expect((await cli('trace', 'batch', '1')).code).toBe(2);
    expect((await cli('trace', 'job')).code).toBe(2);
  });
});
