import type { Config } from '../../shared/config.js';
import { deadLetterTopic } from '../../shared/dead-letters/headers.js';
import type { MessageBus } from '../../shared/kafka/bus.js';
import type { Logger } from '../../shared/logger.js';
import type { WorkerMetrics } from '../worker-metrics.js';
import { createWorkerRegistry } from './metrics.js';
import { createReadiness, type WorkersState } from './readiness.js';
import { createScrapeQueries } from './scrape-queries.js';
import { startOpsServer } from './server.js';

export type WorkerOps = { metrics: WorkerMetrics; url: string; close(): Promise<void> };

/**
 * A worker process's metrics and its HTTP endpoints (WORKER_HTTP_HOST/PORT). Readings at scrape
 * time and readiness probes are bounded by HEALTH_CHECK_TIMEOUT_MS each.
 */
export async function startWorkerOps({
  config,
  logger,
  bus,
  consumers,
  pollers,
  state,
}: {
  config: Pick<Config, 'service' | 'database' | 'workers' | 'retention'>;
  logger: Logger;
  bus: MessageBus;
  /** The hosted consumer kinds: name, group id (with the topic prefix) and topics. */
  consumers: { kind: string; groupId: string; topics: string[] }[];
  /** Names of the hosted polling workers (e.g. webhooks). */
  pollers: string[];
  state: () => WorkersState;
}): Promise<WorkerOps> {
  const timeoutMs = config.service.healthCheckTimeoutMs;
  const queries = createScrapeQueries(config.database.url, timeoutMs, logger);
  const webhooks = pollers.includes('webhooks');
  const groups = consumers.map(({ groupId, topics }) => ({ groupId, topics }));
  const readiness = createReadiness({
    postgres: queries.ping,
    kafka: groups.length > 0 ? () => bus.ping(timeoutMs) : undefined,
    state,
  });
  const metrics = createWorkerRegistry(
    { consumers: consumers.map((c) => c.kind), webhooks },
    {
      consumerLag:
        groups.length > 0
          ? { groups, read: (groupId, topics) => bus.consumerLag(groupId, topics, timeoutMs) }
          : undefined,
      // Counted where the work is hosted only, so N processes of other kinds do not run the same count.
      webhookQueue: webhooks ? queries.webhookQueue : undefined,
      importJobsByStatus: consumers.some((c) => c.kind === 'inbound') ? queries.importJobsByStatus : undefined,
      importJobsEstimate: consumers.some((c) => c.kind === 'inbound') ? queries.importJobsEstimate : undefined,
      deadLetters:
        consumers.length > 0
          ? {
              topics: consumers.flatMap((c) => c.topics.map(deadLetterTopic)),
              read: async (topics) =>
                queries.deadLetterDepths(
                  new Map(
                    await Promise.all(topics.map(async (t) => [t, await bus.topicOffsets(t, timeoutMs)] as const)),
                  ),
                ),
            }
          : undefined,
      retention: {
        tables: [
          {
            table: 'import_jobs',
            limitSeconds: config.retention.importJobRetentionMs / 1000,
            oldestSeconds: queries.oldestFinishedImportJobSeconds,
          },
          {
            table: 'dead_letter_actions',
            limitSeconds: config.retention.deadLetterRetentionMs / 1000,
            oldestSeconds: () =>
              queries.oldestReleasedDeadLetterActionSeconds((topic) => bus.topicOffsets(topic, timeoutMs)),
          },
        ],
      },
      readiness,
    },
  );
  try {
    const server = await startOpsServer({
      host: config.workers.httpHost,
      port: config.workers.httpPort,
      registry: metrics.registry,
      readiness,
      logger,
    });
    return {
      metrics,
      url: server.url,
      async close() {
        await server.close();
        await queries.close();
      },
    };
  } catch (err) {
    await queries.close();
    throw err;
  }
}
