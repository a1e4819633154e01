// `npm run bench:kafka-clients`: the Kafka client behind our bus adapter (kafkajs) against a
// maintained alternative that installs from the npm registry alone (@platformatic/kafka, pure
// JavaScript), on the service's own path: the gateway's inbound chunk messages (cut and enveloped
// as the gateway does), sent by an idempotent producer with acks=all and one request in flight,
// BENCH_CONCURRENCY batches at a time, one send per batch. Each client runs in this process in
// turn, rounds alternated (kafkajs, platformatic, kafkajs, …) so a drifting machine favours
// neither; the median round of each counts. Prints targets/s, MB/s, CPU ms per 1,000 targets
// (this process's own CPU time while sending) and the ratios. Asserts nothing.
// Options (env): BENCH_BATCHES (100), BENCH_BATCH_SIZE (1000), BENCH_CONCURRENCY (4),
// BENCH_ROUNDS (3), KAFKA_BROKERS (127.0.0.1:9092; scripts/kafka up starts one).
import { randomBytes, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { Producer as PlatformaticProducer } from '@platformatic/kafka';
import { Kafka, logLevel } from '../src/shared/kafka/kafkajs.js'; // kafkajs as the service runs it (native CRC32C, encoders)
import { chunkMessages, cutIntoChunks } from '../src/gateway/inbound/chunks.js';
import { loadConfig } from '../src/shared/config.js';
import { durableProducer } from '../src/shared/kafka/serial-producer.js';
import { batchTargets, benchSourceSystem } from './lib/batches.js';
import { round, runLoops } from './lib/stats.js';
import { envInt } from './lib/env.js';

const opts = {
  batches: envInt('BENCH_BATCHES', 100),
  batchSize: envInt('BENCH_BATCH_SIZE', 1000),
  concurrency: envInt('BENCH_CONCURRENCY', 4),
  rounds: envInt('BENCH_ROUNDS', 3),
};
const repoRoot = new URL('..', import.meta.url).pathname;
if (!process.env.KAFKA_BROKERS) execFileSync(`${repoRoot}scripts/kafka`, ['up'], { stdio: 'inherit' });
const config = loadConfig({ ...process.env, DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused' });
const brokers = config.kafka.brokers;
const runId = randomBytes(4).toString('hex');
const topic = `bench-clients-${runId}`;

type Message = { key: string; value: Buffer; headers: Record<string, string> };
/** A client with the batches already in its own message form (made before any clock starts). */
type Client = { name: string; send(batch: number): Promise<void>; close(): Promise<void> };

function buildBatches(): Message[][] {
  return Array.from({ length: opts.batches }, (_, i) => {
    const items = batchTargets(runId, 'k', i, opts.batchSize).map((target, index) => ({ index, target }));
    const chunks = cutIntoChunks(items, config.inbound.chunkMaxBytes);
    const meta = { tenantId: randomUUID(), clientId: randomUUID(), requestId: `k${i}`, correlationId: `k${i}` };
    return chunkMessages(String(1_000_000 + i), benchSourceSystem, chunks, meta).map((m) => ({
      key: m.key,
      value: Buffer.from(m.value),
      headers: m.headers ?? {},
    }));
  });
}

async function kafkajsClient(batches: Message[][]): Promise<Client> {
  const kafka = new Kafka({ clientId: `bench-kafkajs-${runId}`, brokers, logLevel: logLevel.NOTHING });
  const producer = durableProducer(kafka); // the service's settings: idempotent, acks=-1, one in flight
  await producer.connect();
  return {
    name: 'kafkajs 2.2.4',
    send: async (i) => {
      await producer.send({ topic, acks: -1, messages: batches[i]! });
    },
    close: () => producer.disconnect(),
  };
}

async function platformaticClient(batches: Message[][]): Promise<Client> {
  const producer = new PlatformaticProducer({
    clientId: `bench-platformatic-${runId}`,
    bootstrapBrokers: brokers,
    idempotent: true, // acks=all, one request in flight (the library forces it for idempotence)
  });
  const own = batches.map((messages) =>
    messages.map((m) => ({
      topic,
      key: Buffer.from(m.key),
      value: m.value,
      // A Map: with a plain object of headers, 2.12.1 never settles the send (seen here).
      headers: new Map(Object.entries(m.headers).map(([k, v]) => [Buffer.from(k), Buffer.from(v)])),
    })),
  );
  return {
    name: '@platformatic/kafka 2.12.1',
    send: async (i) => {
      await producer.send({ messages: own[i]! });
    },
    close: () => producer.close(),
  };
}

type Round = { targetsPerSecond: number; megabytesPerSecond: number; cpuMsPer1000: number };

async function measure(client: Client, batches: Message[][], count = batches.length): Promise<Round> {
  const bytes = batches.slice(0, count).reduce((n, b) => n + b.reduce((m, x) => m + x.value.length, 0), 0);
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await runLoops(count, opts.concurrency, Date.now() + 600_000, (i) => client.send(i));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const targets = count * opts.batchSize;
  return {
    targetsPerSecond: Math.round(targets / seconds),
    megabytesPerSecond: round(bytes / 1e6 / seconds, 1),
    cpuMsPer1000: round((cpu.user + cpu.system) / 1000 / (targets / 1000), 2),
  };
}

const median = (rounds: Round[]) =>
  [...rounds].sort((a, b) => a.targetsPerSecond - b.targetsPerSecond)[Math.floor(rounds.length / 2)]!;

const admin = new Kafka({ clientId: `bench-admin-${runId}`, brokers, logLevel: logLevel.NOTHING }).admin();
await admin.connect();
await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: config.kafka.topicPartitions }] });
try {
  const batches = buildBatches();
  const clients = [await kafkajsClient(batches), await platformaticClient(batches)];
  for (const c of clients) await measure(c, batches, opts.concurrency * 2); // warm-up
  const results = new Map<string, Round[]>(clients.map((c) => [c.name, []]));
  for (let r = 0; r < opts.rounds; r++) {
    for (const c of clients) results.get(c.name)!.push(await measure(c, batches));
  }
  for (const c of clients) await c.close();
  const [base, other] = clients.map((c) => median(results.get(c.name)!)) as [Round, Round];
  const mb = batches.reduce((n, b) => n + b.reduce((m, x) => m + x.value.length, 0), 0) / 1e6;
  console.log(
    `\nKafka clients on the inbound path: ${opts.batches} batches × ${opts.batchSize} targets (${round(mb)} MB), ` +
      `${opts.concurrency} at a time, idempotent, acks=all; median of ${opts.rounds} alternated rounds`,
  );
  for (const c of clients) {
    const m = median(results.get(c.name)!);
    console.log(
      `${c.name.padEnd(27)} ${String(m.targetsPerSecond).padStart(9)} targets/s  ${String(m.megabytesPerSecond).padStart(6)} MB/s  ` +
        `${String(m.cpuMsPer1000).padStart(6)} ms CPU per 1,000 targets  rounds ${results
          .get(c.name)!
          .map((x) => x.targetsPerSecond)
          .join(', ')}`,
    );
  }
  console.log(
    `platformatic / kafkajs: throughput ×${round(other.targetsPerSecond / base.targetsPerSecond, 2)}, ` +
      `CPU per target ×${round(other.cpuMsPer1000 / base.cpuMsPer1000, 2)}`,
  );
} finally {
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
}
