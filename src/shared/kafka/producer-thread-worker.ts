// The thread side of producer-thread.ts: one kafkajs producer, configured as the bus's own
// (idempotent, acks=-1, one request in flight), whose encoding, checksums and socket writes of
// large sends happen here instead of on the gateway's event loop. Log lines and errors go back
// to the owning thread as data.
import { parentPort, workerData } from 'node:worker_threads';
import { Kafka, logLevel } from 'kafkajs';
import { startBulkThread } from '../bulk-thread.js';
import type { SendReply, SendRequest, SerialisedError, ThreadLog } from './producer-thread.js';
import { memoConnect } from './memo-connect.js';
import { partitionCounts } from './partitions.js';
import { createSerialProducer, durableProducer } from './serial-producer.js';
import { kafkaClientOptions, type KafkaSecurity } from './client-security.js';
import { ourLevel } from './kafkajs-logging.js';

startBulkThread('kafka-producer');

const { brokers, clientId, security } = workerData as { brokers: string[]; clientId: string; security: KafkaSecurity };
const port = parentPort!;

const kafka = new Kafka({
  clientId,
  brokers,
  ...kafkaClientOptions(security),
  logLevel: logLevel.INFO,
  logCreator:
    () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      port.postMessage({ log: { level: ourLevel(level, message, extra), message, extra } } satisfies {
        log: ThreadLog;
      });
    },
});
const admin = kafka.admin();
const connectAdmin = memoConnect(() => admin.connect());

// One send at a time per partition, as the bus's own (serial-producer.ts says why).
const producer = createSerialProducer(
  () => durableProducer(kafka),
  partitionCounts(() => connectAdmin().then(() => admin)),
  (err) =>
    port.postMessage({
      log: {
        level: 'warn',
        message: 'kafka producer replaced after a send it gave up on',
        extra: { err: serialise(err) },
      },
    } satisfies { log: ThreadLog }),
);

/** A transferred Buffer arrives as a plain Uint8Array: view it as a Buffer without copying. */
const asBuffer = (value: string | Uint8Array) =>
  typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);

/** What the owner needs to classify a failure (name, retriable, message), down the cause chain. */
function serialise(err: unknown, depth = 0): SerialisedError {
  const e = err as { name?: unknown; message?: unknown; retriable?: unknown; cause?: unknown } | null;
  return {
    name: typeof e?.name === 'string' ? e.name : 'Error',
    message: typeof e?.message === 'string' ? e.message : String(err),
    retriable: e?.retriable === true,
    cause: e?.cause && depth < 4 ? serialise(e.cause, depth + 1) : undefined,
  };
}

port.on('message', (req: SendRequest | 'close') => {
  if (req === 'close') {
    void Promise.allSettled([producer.close(), admin.disconnect()]).then(() => port.close());
    return;
  }
  producer
    .send(
      {
        topic: req.topic,
        acks: -1,
        messages: req.messages.map((m) => ({ key: m.key, value: asBuffer(m.value), headers: m.headers })),
      },
      req.deadline,
    )
    .then(
      () => port.postMessage({ id: req.id } satisfies SendReply),
      (err: unknown) => port.postMessage({ id: req.id, error: serialise(err) } satisfies SendReply),
    );
});
