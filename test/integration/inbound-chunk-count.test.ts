import { afterAll, describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import type { InboundMessage, MessageBus, OutboundMessage } from '../../src/shared/kafka/bus.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import { inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { deadLetterTopic } from '../../src/workers/worker-kind.js';
import { v1ChunkValue, v1Headers } from '../support/chunk-messages.js';
import { insertImportJob } from '../support/fixtures.js';
import { eventually, testBus, uniqueName, reading } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// The inbound worker reads a chunk's identity from its header (v2) or the text before its items
// (v1) and lets PostgreSQL read the items (decode-chunk.ts), counting what it read. Through the
// real broker and database: a chunk whose items do not number what it names is dead-lettered and
// changes nothing, in both forms; the gateway's form with a repeated external id and a v1 chunk of
// an earlier gateway (no item count) are applied exactly.
const suite = useGatewaySuite({ env: () => ({ KAFKA_TOPIC_PARTITIONS: '1' }) });

let workers: RunningWorkers | undefined;
let bus: MessageBus | undefined;
let stopReader = async () => undefined as void;
afterAll(async () => {
  await stopReader();
  await workers?.stop();
  await bus?.close();
});

describe('inbound chunks read without parsing their items', () => {
  it('dead-letters a chunk whose item count is wrong; applies the others exactly', async () => {
    const topic = topicNames(suite.config).inboundTargets;
    workers = await startWorkers(suite.config, createLogger('silent', 'chunk-count'), [inboundWorker]);
    bus = testBus();
    const dlq: InboundMessage[] = [];
    const reader = bus.consumerGroup(uniqueName('dlq-reader'));
    await reader.run(
      [deadLetterTopic(topic)],
      reading((messages) => void dlq.push(...messages)),
    );
    stopReader = () => reader.stop();

    const caller = { tenantId: suite.demo.tenantId, clientId: suite.demo.clients.all!.clientId };
    const ids = { ...caller, requestId: null, correlationId: null };
    const prefix = uniqueName('count');
    const [a, b, c] = makeTargets(3, prefix);
    const identity = (importJobId: number) => ({
      importJobId: String(importJobId),
      sourceSystem: 'fixture',
      chunkIndex: 0,
      chunkCount: 1,
    });

    // 1. Names 3 items, holds 2: a gateway's v2 chunk with its header's count raised, and a v1 one.
    const wrong = await insertImportJob(suite.pool, caller);
    const twoItems = [
      { index: 0, target: a! },
      { index: 1, target: b! },
    ];
    const [twoRows] = chunkMessages(String(wrong), 'fixture', cutIntoChunks(twoItems, 1 << 20), ids);
    const wrongMessage: OutboundMessage = {
      ...twoRows!,
      value: Buffer.from((twoRows!.value as Buffer).toString().replace('"itemCount":2', '"itemCount":3')),
    };
    const wrongV1 = await insertImportJob(suite.pool, caller);
    const wrongV1Message: OutboundMessage = {
      key: String(wrongV1),
      value: v1ChunkValue(ids, identity(wrongV1), twoItems, 3),
      headers: v1Headers,
    };
    // 2. The gateway's own form: 3 items, the last repeating the first one's external id.
    const good = await insertImportJob(suite.pool, caller);
    const repeated = { ...a!, name: 'the later one wins' };
    const goodItems = [
      { index: 0, target: a! },
      { index: 1, target: c! },
      { index: 2, target: repeated },
    ];
    const [goodMessage] = chunkMessages(String(good), 'fixture', cutIntoChunks(goodItems, 1 << 20), ids);
    // 3. A v1 chunk of an earlier gateway: no item count.
    const old = await insertImportJob(suite.pool, caller);
    const oldTarget = makeTargets(1, `${prefix}-old`)[0]!;
    const oldMessage: OutboundMessage = {
      key: String(old),
      value: v1ChunkValue(ids, identity(old), [{ index: 0, target: oldTarget }]),
      headers: v1Headers,
    };
    await bus.produce(topic, [wrongMessage, wrongV1Message, goodMessage!, oldMessage]);

    const jobs = await eventually(
      async () => {
        const { rows } = await suite.pool.query(
          `SELECT id::int AS id, status, applied_count, failed_count, chunks_done, failure_reason
             FROM import_jobs WHERE id = ANY($1::bigint[]) ORDER BY id`,
          [[wrong, wrongV1, good, old]],
        );
        return rows.every((r) => r.status !== 'Queued' && r.status !== 'Processing') ? rows : undefined;
      },
      120_000,
      'the four jobs final',
    );
    expect(jobs).toEqual([
      ...[wrong, wrongV1].map((id) => ({
        id,
        status: 'Failed',
        applied_count: 0,
        failed_count: id === wrong ? 3 : 2, // v2: the count its header names; v1: the items it holds
        chunks_done: 1,
        failure_reason: 'chunk names 3 items but holds 2',
      })),
      { id: good, status: 'Completed', applied_count: 3, failed_count: 0, chunks_done: 1, failure_reason: null },
      { id: old, status: 'Completed', applied_count: 1, failed_count: 0, chunks_done: 1, failure_reason: null },
    ]);
    await eventually(() => (dlq.length >= 2 ? true : undefined), 60_000, 'the wrong chunks dead-lettered');
    // Applied side by side (WORKER_APPLY_CONCURRENCY), so dead-lettered in either order.
    expect(dlq.map((m) => m.key?.toString()).sort()).toEqual([String(wrong), String(wrongV1)].sort());
    for (const m of dlq) expect(m.headers['x-dlq-error']).toBe('chunk names 3 items but holds 2');

    const { rows: targets } = await suite.pool.query(
      `SELECT external_id, name, last_import_job_id::int AS job, last_item_index AS item
         FROM targets WHERE tenant_id = $1 AND source_system = 'fixture' AND external_id LIKE $2 ORDER BY external_id`,
      [caller.tenantId, `${prefix}%`],
    );
    expect(targets).toEqual(
      [
        { external_id: a!.externalId, name: 'the later one wins', job: good, item: 2 },
        { external_id: c!.externalId, name: c!.name, job: good, item: 1 },
        { external_id: oldTarget.externalId, name: oldTarget.name, job: old, item: 0 },
      ].sort((x, y) => (x.external_id < y.external_id ? -1 : 1)),
    );
  });
});
