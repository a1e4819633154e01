// Phase A0 of bench/inbound.ts, run as its own process: the physical limit of the ingest path.
// The service's own Kafka adapter (createKafkaBus: kafkajs, idempotent, acks=-1,
// maxInFlightRequests 1, one producer per process, like the gateway) sends the same batches,
// cut into messages exactly as the gateway cuts them (cutIntoChunks, the same envelope and
// headers, keyed by an import job id), into the same topic with the same concurrency: one
// produce() call per batch, as the gateway makes one per request. No HTTP, no validation, no
// PostgreSQL; messages are serialised before the clock starts. Parameters: BENCH_PRODUCER_PARAMS
// (JSON) plus the service's usual environment (KAFKA_BROKERS, KAFKA_TOPIC_PREFIX, …).
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import { loadConfig } from '../../src/shared/config.js';
import { createKafkaBus, type OutboundMessage } from '../../src/shared/kafka/bus.js';
import { allTopics, topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import { batchTargets, benchSourceSystem } from './batches.js';
import { percentiles, resultPrefix, round, runLoops } from './stats.js';

export type ProducerParams = {
  runId: string;
  tag: string;
  batches: number;
  warmupBatches: number;
  batchSize: number;
  concurrency: number;
  tenantId: string;
  clientId: string;
  maxSeconds: number;
  rounds: number;
};

export type RoundResult = {
  batches: number;
  messages: number;
  bytes: number;
  targets: number;
  seconds: number;
  targetsPerSecond: number;
  megabytesPerSecond: number;
  latencyMs: ReturnType<typeof percentiles>;
  failures: number;
  /** CPU seconds this process used in the measured part. */
  cpuSeconds: number;
};

/** The median round, plus every round's targets/s. */
export type ProducerResult = RoundResult & { rounds: number[] };

async function main() {
  const p = JSON.parse(process.env.BENCH_PRODUCER_PARAMS ?? '') as ProducerParams;
  const config = loadConfig(process.env);
  const topic = topicNames(config.kafka).inboundTargets;
  const bus = createKafkaBus({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-bench-a0`,
    produceTimeoutMs: config.kafka.produceTimeoutMs,
    logger: createLogger(config.service.logLevel, 'bench-a0'),
  });
  bus.declareTopics(allTopics(config.kafka));

  // Job ids far above the real ones; nothing consumes these messages (the orchestrator moves the
  // workers' group offsets past them before phase A).
  const build = (tag: string, i: number): OutboundMessage[] => {
    const items = batchTargets(p.runId, tag, i, p.batchSize).map((target, index) => ({ index, target }));
    const chunks = cutIntoChunks(items, config.inbound.chunkMaxBytes);
    const importJobId = String(9_000_000_000 + i + (tag.endsWith('w') ? 1_000_000 : 0));
    const meta = {
      tenantId: p.tenantId,
      clientId: p.clientId,
      requestId: `a0-${tag}${i}`,
      correlationId: `a0-${tag}${i}`,
    };
    return chunkMessages(importJobId, benchSourceSystem, chunks, meta);
  };
  const warm = Array.from({ length: p.warmupBatches }, (_, i) => build(`${p.tag}w`, i));
  const batches = Array.from({ length: p.batches }, (_, i) => build(p.tag, i));
  process.stdout.write(`bare producer: ${batches.length} batches ready\n`);

  const deadline = () => Date.now() + p.maxSeconds * 1000;
  await runLoops(warm.length, p.concurrency, deadline(), (i) => bus.produce(topic, warm[i]!));

  // Rounds: the same messages again (nothing consumes them), so one short burst on a shared
  // machine does not decide the baseline; the median round is the figure.
  const rounds: RoundResult[] = [];
  // produce() hands large values over to the producer thread (their memory moves there), so each
  // round sends copies made before its clock starts, and sizes are taken before sending.
  const copy = (batch: OutboundMessage[]) => batch.map((m) => ({ ...m, value: Buffer.from(m.value) }));
  const sizes = batches.map((b) => b.reduce((n, m) => n + Buffer.byteLength(m.value), 0));
  for (let r = 0; r < p.rounds; r++) {
    const roundBatches = batches.map(copy);
    const latencies: number[] = [];
    let failures = 0;
    let sent = 0;
    let messages = 0;
    let bytes = 0;
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    await runLoops(batches.length, p.concurrency, deadline(), async (i) => {
      const t = performance.now();
      try {
        await bus.produce(topic, roundBatches[i]!);
      } catch {
        failures++;
        return;
      }
      latencies.push(performance.now() - t);
      sent++;
      messages += batches[i]!.length;
      bytes += sizes[i]!;
    });
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const targets = sent * p.batchSize;
    rounds.push({
      batches: sent,
      messages,
      bytes,
      targets,
      seconds: round(seconds, 3),
      targetsPerSecond: round(targets / seconds),
      megabytesPerSecond: round(bytes / 1e6 / seconds, 2),
      latencyMs: Object.fromEntries(
        Object.entries(percentiles(latencies)).map(([k, v]) => [k, round(v, 1)]),
      ) as ReturnType<typeof percentiles>,
      failures,
      cpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
    });
  }
  await bus.close();
  const median = [...rounds].sort((x, y) => x.targetsPerSecond - y.targetsPerSecond)[Math.floor(rounds.length / 2)]!;
  const result: ProducerResult = { ...median, rounds: rounds.map((x) => x.targetsPerSecond) };
  process.stdout.write(`${resultPrefix}${JSON.stringify(result)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bare producer: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
