import { afterAll, describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import type { InboundMessage, MessageBus, OutboundMessage } from '../../src/shared/kafka/bus.js';
import { chunkMessageType } from '../../src/shared/inbound/chunk-message.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { deadLetterTopic } from '../../src/shared/dead-letters/headers.js';
import { insertImportJob } from '../support/fixtures.js';
import { eventually, testBus, uniqueName, reading } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// The inbound worker reads a chunk's identity from its header line and lets PostgreSQL read the
// items (decode-chunk.ts), counting what it read. Through the real broker and database: a chunk
// whose items do not number what it names is dead-lettered and changes nothing, as is a chunk of
// another version (a one-document JSON chunk of before release); the gateway's form with a
// repeated external id is applied exactly.
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
    const topic = topicNames(suite.config.kafka).inboundTargets;
    workers = await startWorkers({
      config: suite.config,
      logger: createLogger('silent', 'chunk-count'),
      kinds: [inboundWorker, inboundExpressWorker],
    });
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

    // 1. Names 3 items, holds 2: a gateway's chunk with its header's count raised.
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
    // 2. A one-document JSON chunk (version 1, never released): refused, not guessed at.
    const oneDocument = await insertImportJob(suite.pool, caller);
    const oneDocumentMessage: OutboundMessage = {
      key: String(oneDocument),
      value: JSON.stringify({
        ...ids,
        type: chunkMessageType,
        version: 1,
        payload: { ...identity(oneDocument), items: twoItems },
      }),
      headers: { 'message-type': chunkMessageType, 'message-version': '1', 'tenant-id': caller.tenantId },
    };
    // 3. The gateway's own form: 3 items, the last repeating the first one's external id.
    const good = await insertImportJob(suite.pool, caller);
    const repeated = { ...a!, name: 'the later one wins' };
    const goodItems = [
      { index: 0, target: a! },
      { index: 1, target: c! },
      { index: 2, target: repeated },
    ];
    const [goodMessage] = chunkMessages(String(good), 'fixture', cutIntoChunks(goodItems, 1 << 20), ids);
    await bus.produce(topic, [wrongMessage, oneDocumentMessage, goodMessage!]);

    const jobs = await eventually(
      async () => {
        const { rows } = await suite.pool.query(
          `SELECT id::int AS id, status, applied_count, failed_count, chunks_done, failure_reason
             FROM import_jobs WHERE id = ANY($1::bigint[]) ORDER BY id`,
          [[wrong, oneDocument, good]],
        );
        const final = rows.filter((r) => r.status !== 'Queued' && r.status !== 'Processing');
        return final.length === 2 && dlq.length >= 2 ? rows : undefined;
      },
      120_000,
      'two jobs final and two chunks dead-lettered',
    );
    const wrongError = 'chunk names 3 items but holds 2';
    expect(jobs).toEqual([
      { id: wrong, status: 'Failed', applied_count: 0, failed_count: 3, chunks_done: 1, failure_reason: wrongError },
      // Nothing of it decodes, so nothing marks its job: it stays Queued, its message in the dead letters.
      { id: oneDocument, status: 'Queued', applied_count: 0, failed_count: 0, chunks_done: 0, failure_reason: null },
      { id: good, status: 'Completed', applied_count: 3, failed_count: 0, chunks_done: 1, failure_reason: null },
    ]);
    await eventually(() => (dlq.length >= 2 ? true : undefined), 60_000, 'the refused chunks dead-lettered');
    // Applied side by side (WORKER_APPLY_CONCURRENCY), so dead-lettered in either order.
    const errors = Object.fromEntries(dlq.map((m) => [m.key?.toString(), m.headers['x-dlq-error']]));
    expect(errors).toEqual({ [wrong]: wrongError, [oneDocument]: 'chunk version 1 is not 2' });

    const { rows: targets } = await suite.pool.query(
      `SELECT external_id, name, last_import_job_id::int AS job, last_item_index AS item
         FROM targets WHERE tenant_id = $1 AND source_system = 'fixture' AND external_id LIKE $2 ORDER BY external_id`,
      [caller.tenantId, `${prefix}%`],
    );
    expect(targets).toEqual(
      [
        { external_id: a!.externalId, name: 'the later one wins', job: good, item: 2 },
        { external_id: c!.externalId, name: c!.name, job: good, item: 1 },
      ].sort((x, y) => (x.external_id < y.external_id ? -1 : 1)),
    );
  });
});
