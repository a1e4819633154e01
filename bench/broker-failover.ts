// `npm run bench:failover`: what a leader broker's SIGKILL costs writers, for the service's produce
// path and for bare clients side by side, in one fault (issue 29). A throwaway three-broker
// cluster (scripts/kafka-cluster), one topic of 6 partitions, replication 3, min.insync.replicas 2;
// each client keeps BENCH_LANES sends per partition going (one message at a time, timeout 3 s),
// then the broker leading most partitions is SIGKILLed (BENCH_STOP=controlled: stopped as in a
// rolling restart) and the bench waits until its partitions have new leaders. Clients:
//   service      the bus's produce() (serial producer per partition, availability, produce timeout)
//   kafkajs      a bare kafkajs producer, acks=all, not idempotent, 5 requests in flight
//   platformatic a bare @platformatic/kafka idempotent producer (acks=all)
//   acks=1       a bare kafkajs producer with acks=1: what the fault costs without the in-sync wait
// Prints, per client, for partitions whose leader lived and for the lost ones: sends acknowledged
// from a second after the fault until the new leaders, and the seconds from the fault until the
// first send started after it was acknowledged; the p99 latency of live partitions' sends before
// and during. Extra server.properties lines for the cluster: KAFKA_CLUSTER_EXTRA_CONFIG (e.g.
// broker.session.timeout.ms=3000). Asserts nothing.
import { Producer as PlatformaticProducer } from '@platformatic/kafka';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { createKafkaBus } from '../src/shared/kafka/bus.js';
import { partitionOf } from '../src/shared/kafka/partitions.js';
import { createLogger } from '../src/shared/logger.js';
import { startThrowawayCluster } from '../test/support/throwaway-cluster.js';
import { percentiles, round } from './lib/stats.js';

const lanes = Number(process.env.BENCH_LANES ?? 1);
const stopKind = process.env.BENCH_STOP === 'controlled' ? 'controlled' : 'kill';
const topic = 'bench.failover';
const partitionCount = 6;
const timeoutMs = 3000;
const value = 'x'.repeat(200);

const cluster = await startThrowawayCluster();
const brokers = cluster.plaintextBrokers.split(',');
const kafka = (clientId: string) => new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING });
const admin = kafka('bench-failover-admin').admin();
await admin.connect();
await admin.createTopics({
  topics: [
    {
      topic,
      numPartitions: partitionCount,
      replicationFactor: 3,
      configEntries: [{ name: 'min.insync.replicas', value: '2' }],
    },
  ],
  waitForLeaders: true,
});
const leaders = async () =>
  (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.sort(
    (a, b) => a.partitionId - b.partitionId,
  ).map((p) => p.leader);

/** A key the default partitioner puts on each partition. */
const keyOf = new Map<number, string>();
for (let i = 0; keyOf.size < partitionCount; i++) {
  const p = partitionOf(topic, { key: `k${i}`, value: '' }, partitionCount);
  if (!keyOf.has(p)) keyOf.set(p, `k${i}`);
}

const withTimeout = async (send: Promise<unknown>) => {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      send,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
  }
};

type Client = { name: string; send(partition: number): Promise<void>; close(): Promise<void> };

async function serviceClient(): Promise<Client> {
  const bus = createKafkaBus({
    brokers,
    clientId: 'bench-failover-service',
    logger: createLogger('silent', 'bench'),
    produceTimeoutMs: timeoutMs,
  });
  return {
    name: 'service',
    send: (p) => bus.produce(topic, [{ key: keyOf.get(p)!, value }]),
    close: () => bus.close(),
  };
}

async function kafkajsClient(name: string, acks: -1 | 1): Promise<Client> {
  const producer = kafka(`bench-failover-${name}`).producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  return {
    name,
    send: (p) => withTimeout(producer.send({ topic, acks, messages: [{ key: keyOf.get(p)!, value }] })),
    close: () => producer.disconnect(),
  };
}

async function platformaticClient(): Promise<Client> {
  const producer = new PlatformaticProducer({
    clientId: 'bench-failover-platformatic',
    bootstrapBrokers: brokers,
    idempotent: true,
  });
  return {
    name: 'platformatic',
    send: (p) =>
      withTimeout(
        producer.send({
          messages: [{ topic, partition: p, key: Buffer.from(keyOf.get(p)!), value: Buffer.from(value) }],
        }),
      ),
    close: () => producer.close(),
  };
}

type Sent = { client: string; partition: number; start: number; end: number; ok: boolean };
const sent: Sent[] = [];
let running = true;
async function lane(client: Client, partition: number) {
  while (running) {
    const start = Date.now();
    const ok = await client.send(partition).then(
      () => true,
      () => false,
    );
    sent.push({ client: client.name, partition, start, end: Date.now(), ok });
    if (!ok) await new Promise((r) => setTimeout(r, 200)); // as a client honouring a short Retry-After
  }
}

const clients = [
  await serviceClient(),
  await kafkajsClient('kafkajs', -1),
  await platformaticClient(),
  await kafkajsClient('acks=1', 1),
];
const loops = clients.flatMap((c) => [...Array(partitionCount * lanes)].map((_, i) => lane(c, i % partitionCount)));
await new Promise((r) => setTimeout(r, 10_000)); // warm: every client connected and sending
const before = await leaders();
const led = new Map<number, number>();
for (const l of before) led.set(l, (led.get(l) ?? 0) + 1);
const victim = [...led].sort((a, b) => b[1] - a[1])[0]![0];
// A SIGKILL's moment is when the command returns; a controlled stop's when it begins.
let fault = Date.now();
await (stopKind === 'controlled' ? cluster.stop(victim) : cluster.kill(victim));
if (stopKind === 'kill') fault = Date.now();
/** Leaders as a fresh client reads them through a live broker (a cached connection may hang). */
const leadersNow = async () => {
  const fresh = new Kafka({
    clientId: 'bench-failover-watch',
    brokers: brokers.filter((_, i) => i + 1 !== victim),
    connectionTimeout: 500,
    requestTimeout: 1000,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  }).admin();
  try {
    await fresh.connect();
    const { topics } = await fresh.fetchTopicMetadata({ topics: [topic] });
    return topics[0]!.partitions.map((p) => p.leader);
  } finally {
    await fresh.disconnect();
  }
};
let moved = 0;
while (!moved) {
  const now = await leadersNow().catch(() => null);
  if (now && !now.includes(victim)) moved = Date.now();
  else await new Promise((r) => setTimeout(r, 100));
}
await new Promise((r) => setTimeout(r, 5000));
running = false;
await Promise.all(loops);

const seconds = (ms: number) => round(ms / 1000, 1);
console.log(
  `broker ${victim} (${stopKind === 'kill' ? 'SIGKILLed' : 'stopped'}) led ${led.get(victim)} of ${partitionCount} partitions; ` +
    `its partitions had new leaders ${seconds(moved - fault)} s later${process.env.KAFKA_CLUSTER_EXTRA_CONFIG ? ` (cluster: ${process.env.KAFKA_CLUSTER_EXTRA_CONFIG.replace(/\n/g, ', ')})` : ''}`,
);
console.log(
  `${'client'.padEnd(13)} ${'live partitions: acked in window, first ack after (s), p99 before/during (ms)'.padEnd(82)} lost partitions: acked in window, first ack after (s)`,
);
for (const c of clients) {
  const mine = sent.filter((s) => s.client === c.name);
  const figures = (live: boolean) => {
    const ofKind = mine.filter((s) => (before[s.partition] !== victim) === live);
    const inWindow = ofKind.filter((s) => s.ok && s.start >= fault + 1000 && s.end < moved).length;
    const first = ofKind.filter((s) => s.ok && s.start >= fault).sort((a, b) => a.end - b.end)[0];
    const latency = (ss: Sent[]) => (ss.length ? percentiles(ss.map((s) => s.end - s.start)).p99 : null);
    const p99Before = latency(ofKind.filter((s) => s.ok && s.end < fault));
    const p99During = latency(ofKind.filter((s) => s.start >= fault && s.end < moved));
    return {
      inWindow,
      first: first ? seconds(first.end - fault) : '-',
      p99: `${p99Before ?? '-'}/${p99During ?? '-'}`,
    };
  };
  const live = figures(true);
  const lost = figures(false);
  console.log(
    `${c.name.padEnd(13)} ${`${live.inWindow}, ${live.first}, ${live.p99}`.padEnd(82)} ${lost.inWindow}, ${lost.first}`,
  );
}
await Promise.allSettled(clients.map((c) => c.close()));
await admin.disconnect();
await cluster.destroy();
process.exit(0);
