// The thread side of producer-thread.ts: one kafkajs producer, configured as the bus's own
// (idempotent, acks=-1, one request in flight), whose encoding, checksums and socket writes of
// large sends happen here instead of on the gateway's event loop. Log lines go back to the
// owning thread as data.
import { parentPort } from 'node:worker_threads';
import { Kafka, logLevel } from './kafkajs.js';
import { startBulkThread } from '../bulk-thread.js';
import { threadData, threadTask, toThreadError } from '../threads.js';
import type { ProducerTask, ThreadConfig, ThreadLog } from './producer-thread.js';
import { memoConnect } from './memo-connect.js';
import { partitionCounts } from './partitions.js';
import { createSerialProducer, durableProducer } from './serial-producer.js';
import { kafkaClientOptions } from './client-security.js';
import { ourLevel } from './kafkajs-logging.js';

startBulkThread('kafka-producer');

const { brokers, clientId, security } = threadData<ThreadConfig>();
const postLog = (log: ThreadLog) => parentPort!.postMessage({ log });

const kafka = new Kafka({
  clientId,
  brokers,
  ...kafkaClientOptions(security),
  logLevel: logLevel.INFO,
  logCreator:
    () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      postLog({ level: ourLevel(level, message, extra), message, extra });
    },
});
const admin = kafka.admin();
const connectAdmin = memoConnect(() => admin.connect());

// One send at a time per partition, as the bus's own (serial-producer.ts says why).
const producer = createSerialProducer(
  () => durableProducer(kafka),
  partitionCounts(() => connectAdmin().then(() => admin)),
  (err) =>
    postLog({
      level: 'warn',
      message: 'kafka producer replaced after a send it gave up on',
      extra: { err: toThreadError(err) },
    }),
);

/** A transferred Buffer arrives as a plain Uint8Array: view it as a Buffer without copying. */
const asBuffer = (value: string | Uint8Array) =>
  typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);

export default threadTask(async (task: ProducerTask): Promise<void> => {
  if (task.op === 'close') {
    await Promise.allSettled([producer.close(), admin.disconnect()]);
    return;
  }
  await producer.send(
    {
      topic: task.topic,
      acks: -1,
      messages: task.messages.map((m) => ({ key: m.key, value: asBuffer(m.value), headers: m.headers })),
    },
    task.deadline,
  );
});
