import { utimes, writeFile } from 'node:fs/promises';
import type { Config } from '../shared/config.js';
import { createPool, type Pool } from '../shared/db/pool.js';
import { isBrokerUnreachable } from '../shared/kafka/availability.js';
import { createKafkaBus } from '../shared/kafka/bus.js';
import type { Logger } from '../shared/logger.js';
import { retrying, schedules, type RetrySchedule } from '../shared/retry.js';
import { runWorkerKind, type RunningKind } from './consumer-loop.js';
import type { WorkersState } from './ops/readiness.js';
import { startWorkerOps } from './ops/worker-ops.js';
import { topicsWithDeadLetters, type WorkerDeps, type WorkerKind } from './worker-kind.js';
import { noWorkerMetrics } from './worker-metrics.js';
import { prunedTables, startRetentionPruner, type Pruned } from './retention/pruner.js';

/** How long the pruner waits for a dead-letter topic's watermarks (its marks stay when they do not come). */
const deadLetterOffsetsTimeoutMs = 10_000;

export type RunningWorkers = { stop(): Promise<void> };

/** A worker kind that is not a Kafka consumer group, e.g. the webhook dispatcher polling PostgreSQL. */
export type PollingWorker = {
  name: string;
  polling: true;
  /** Starts it; stop() lets work in hand finish and stops polling. */
  start(deps: WorkerDeps): Promise<{ stop(): Promise<void> }>;
};
export type HostedWorker = WorkerKind | PollingWorker;
const isPolling = (kind: HostedWorker): kind is PollingWorker => 'polling' in kind;

/**
 * Runs start() until it gets past the broker: a worker started while Kafka is down waits for it
 * (logging, with the brokerAtStart backoff) instead of exiting into a restart loop.
 */
function untilBrokerAnswers<T>(logger: Logger, worker: string, start: () => Promise<T>): Promise<T> {
  return retrying(schedules.brokerAtStart, start, {
    retriable: isBrokerUnreachable,
    onRetry: (err, attempt, delayMs) =>
      logger.warn({ err, worker, attempt, delayMs }, 'kafka unreachable at start; waiting for it'),
  });
}

/**
 * A worker process's connections. WORKER_PG_FLUSH_AFTER_KB: bulk applies write data pages faster
 * than the OS writes them back; left to a checkpoint's fsync, they stalled every other commit for
 * up to 0.6 s (docs/benchmarks.md, "Fair workers").
 */
export function createWorkerPool(config: Config, logger: Logger): Pool {
  const flushAfterKb = config.workers.pgFlushAfterKb;
  return createPool(config.database.url, config.database.poolMax, 'connect-workers', {
    onConnectionError: (err) => logger.warn({ err }, 'postgres connection failed'),
    queryTimeoutMs: config.database.queryTimeoutMs,
    ...(flushAfterKb > 0 ? { settings: { backend_flush_after: `${flushAfterKb}kB` } } : {}),
  });
}

/**
 * The workers' composition root: one pool and bus per process, one consumer group per kind. With
 * `serve`, the process also serves /metrics, /livez and /readyz (WORKER_HTTP_HOST/PORT), from
 * before it waits for Kafka until it has stopped.
 */
export async function startWorkers({
  config,
  logger,
  kinds,
  messageRetry,
  serve,
}: {
  config: Config;
  logger: Logger;
  kinds: HostedWorker[];
  /** A message's transient failures (default: retry.ts's messageRetry). */
  messageRetry?: RetrySchedule;
  serve?: { onListening(url: string): void };
}): Promise<RunningWorkers> {
  const pool = createWorkerPool(config, logger);
  const bus = createKafkaBus({ ...config.kafka, clientId: `${config.kafka.clientId}-workers`, logger });
  const consumerKinds = kinds.filter((kind): kind is WorkerKind => !isPolling(kind));
  const groupIdOf = (kind: WorkerKind) => `${config.kafka.topicPrefix}${kind.groupId}`;
  let state: WorkersState = 'starting';
  const ops = serve
    ? await startWorkerOps({
        config,
        logger,
        bus,
        consumers: consumerKinds.map((kind) => ({
          kind: kind.name,
          groupId: groupIdOf(kind),
          topics: kind.topics(config.kafka).map((t) => t.topic),
        })),
        pollers: kinds.filter(isPolling).map((kind) => kind.name),
        state: () => state,
      }).catch(async (err: unknown) => {
        await bus.close();
        await pool.end();
        throw err;
      })
    : undefined;
  if (ops) serve?.onListening(ops.url);
  // As the gateway does (gateway.ts): refused access or missing managed topics stop the process.
  bus.declareTopics(consumerKinds.flatMap((kind) => topicsWithDeadLetters(kind, config.kafka)));
  await bus.checkAtStart(config.kafka.produceTimeoutMs).catch(async (err: unknown) => {
    await ops?.close();
    await bus.close();
    await pool.end();
    throw err;
  });
  const deps: WorkerDeps = { config, logger, pool, bus, metrics: ops?.metrics ?? noWorkerMetrics };
  const groups = consumerKinds.map((kind) => {
    const group = bus.consumerGroup(groupIdOf(kind), {
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
      stallTimeoutMs: config.kafka.consumerStallTimeoutMs,
    });
    group.onCrash((error) => {
      // A non-retriable crash stops kafkajs's consumer for good: exit so a supervisor restarts us.
      logger.fatal({ err: error, worker: kind.name }, 'consumer crashed');
      process.exit(1);
    });
    return { kind, group };
  });
  let pollers: { stop(): Promise<void> }[];
  let running: RunningKind[];
  try {
    running = await Promise.all(
      groups.map(({ kind, group }) =>
        untilBrokerAnswers(logger, kind.name, () => runWorkerKind({ kind, group, deps, messageRetry })),
      ),
    );
    pollers = await Promise.all(kinds.filter(isPolling).map((kind) => kind.start(deps)));
  } catch (err) {
    await ops?.close();
    throw err;
  }
  state = 'running';
  const pruner = startRetentionPruner({
    config,
    logger,
    pool,
    deadLetterOffsets: (topic) => bus.topicOffsets(topic, deadLetterOffsetsTimeoutMs),
    onPruned: (p) => {
      for (const [key, table] of Object.entries(prunedTables)) deps.metrics.pruned(table, p[key as keyof Pruned]);
    },
  });

  // Keeps the process alive until a signal arrives, even with no kind to host, and touches the
  // liveness file for container health checks when one is configured.
  const touch = async () => {
    if (!config.workers.heartbeatFile) return;
    const now = new Date();
    await utimes(config.workers.heartbeatFile, now, now).catch(() => writeFile(config.workers.heartbeatFile, ''));
  };
  await touch();
  const heartbeat = setInterval(() => void touch().catch(() => undefined), 10_000);

  return {
    async stop() {
      state = 'stopping'; // /readyz answers 503 from now on
      clearInterval(heartbeat);
      // Each kind finishes the applies under way and commits before leaving its group.
      await Promise.all([...running.map((kind) => kind.stop()), ...pollers.map((p) => p.stop()), pruner.stop()]);
      await bus.close();
      await pool.end();
      await ops?.close();
    },
  };
}
