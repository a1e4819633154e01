import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { importJobStatuses } from '../../shared/inbound/import-job.js';
import { registerDependencyGauge } from '../../shared/dependency-gauge.js';
import type { PartitionLag } from '../../shared/kafka/bus.js';
import { prunedTables } from '../retention/pruner.js';
import type { Readiness } from './readiness.js';
import type { WebhookQueue } from './scrape-queries.js';
import {
  inboundChunkOutcomes,
  listenLosses,
  type BreakerTransition,
  type MessageOutcome,
  type WebhookOutcome,
  type WorkerMetrics,
} from '../worker-metrics.js';

/**
 * Readings taken at scrape time. A gauge exists only in a process that hosts what it measures
 * (its consumer groups, the inbound kind, the webhook dispatcher); each reading is bounded by its
 * source, and a failed one never fails the scrape: the gauge is left out (NaN for the queue
 * depth, which has no labels) and an error counter goes up.
 */
export type ScrapeSources = {
  consumerLag?: {
    groups: { groupId: string; topics: string[] }[];
    read(groupId: string, topics: string[]): Promise<PartitionLag[]>;
  };
  /** Deliveries due now that a dispatcher would claim; endpoints whose breaker is open. */
  webhookQueue?: () => Promise<WebhookQueue>;
  /**
   * Import jobs not finished yet per status (Queued, Processing; one not listed counts 0), and
   * PostgreSQL's estimate of all import jobs kept (pg_class.reltuples, null before the first
   * ANALYZE): both cheap on a table of a year's jobs.
   */
  importJobsByStatus?: () => Promise<Map<string, number>>;
  importJobsEstimate?: () => Promise<number | null>;
  /** Dead letters of each of these dead-letter topics not yet replayed or purged. */
  deadLetters?: { topics: string[]; read(topics: string[]): Promise<Map<string, number>> };
  /**
   * Per table retention prunes: how long it keeps rows, and the age of its oldest row the pruner
   * would take (null: none), e.g. import_jobs since it finished (every process: each may be the pruner).
   */
  retention?: { tables: RetainedTable[] };
  /** What /readyz answers (worker_ready, connect_dependency_up). */
  readiness?: () => Promise<Readiness>;
};

export type RetainedTable = { table: string; limitSeconds: number; oldestSeconds: () => Promise<number | null> };

export type WorkerRegistry = WorkerMetrics & { registry: Registry };

const prunedTableNames = Object.values(prunedTables);
const unfinishedImportJobStatuses = importJobStatuses.filter((s) => s === 'Queued' || s === 'Processing');
const messageOutcomes: MessageOutcome[] = ['applied', 'failed_attempt', 'dead_lettered'];
const webhookOutcomes: WebhookOutcome[] = ['succeeded', 'retry_scheduled', 'gave_up', 'lease_lost'];
const breakerTransitions: BreakerTransition[] = ['opened', 'closed'];

/** What a process hosts: its consumer kinds' names, and whether it runs the webhook dispatcher. */
export type Hosted = { consumers: string[]; webhooks?: boolean };

/** One registry per worker process (not prom-client's global one), so tests can build several. */
export function createWorkerRegistry(hosted: Hosted, sources: ScrapeSources = {}): WorkerRegistry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const messages = new Counter({
    name: 'worker_messages_total',
    help: 'Kafka messages by worker kind and outcome: applied, failed_attempt (one per failed attempt), dead_lettered',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const applyDuration = new Histogram({
    name: 'worker_apply_duration_seconds',
    help: 'Duration of one successful apply call of a worker kind (a fetched batch of one partition, or the part of it that could run)',
    labelNames: ['kind'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const webhookDeliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Recorded webhook attempts by outcome: succeeded, retry_scheduled, gave_up, lease_lost',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookBreakers = new Counter({
    name: 'webhook_breaker_transitions_total',
    help: 'Webhook endpoint circuit breakers that opened (consecutive failures, or a failed probe) or closed (a success)',
    labelNames: ['transition'] as const,
    registers: [registry],
  });
  const webhookListenLost = new Counter({
    name: 'webhook_listen_connections_lost_total',
    help: 'Webhook dispatcher LISTEN connections lost and replaced, by reason: error, end (the server ended it), check (no longer on a writable server, or no answer); the dispatcher polls meanwhile',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const webhookLeaseRenewalsFailed = new Counter({
    name: 'webhook_lease_renewals_failed_total',
    help: 'Renewals of the leases of the webhook deliveries a dispatcher has in hand that failed (tried again a third of a lease later)',
    registers: [registry],
  });
  const inboundChunks = new Counter({
    name: 'worker_inbound_chunks_total',
    help: 'Inbound target chunks by how they were applied: copied (all targets new, COPY straight into targets), upserted (staging table and upsert), duplicate (applied before), orphan (no such import job)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const pruned = new Counter({
    name: 'retention_pruned_total',
    help: 'Rows the retention pruner deleted, by table (import_jobs: with their chunk ledger and route drafts; dead_letter_actions; dead_letters_handled); one worker process prunes at a time',
    labelNames: ['table'] as const,
    registers: [registry],
  });
  for (const table of prunedTableNames) pruned.inc({ table }, 0);
  // Every series from the start, so rate() and alerts see a 0 before the first event.
  for (const kind of hosted.consumers) for (const outcome of messageOutcomes) messages.inc({ kind, outcome }, 0);
  if (hosted.webhooks) {
    for (const outcome of webhookOutcomes) webhookDeliveries.inc({ outcome }, 0);
    for (const transition of breakerTransitions) webhookBreakers.inc({ transition }, 0);
    for (const reason of listenLosses) webhookListenLost.inc({ reason }, 0);
    webhookLeaseRenewalsFailed.inc(0);
  }
  if (hosted.consumers.some((kind) => kind === 'inbound' || kind === 'inbound-express'))
    for (const outcome of inboundChunkOutcomes) inboundChunks.inc({ outcome }, 0);

  // The registry collects every metric at once. A reading is tracked until its gauge and error
  // counter are updated (it never rejects), and the error counters, registered after the gauges,
  // wait for this scrape's readings: a failure shows in the same scrape.
  const readings = new Set<Promise<unknown>>();
  const reading = <T>(work: Promise<T>): Promise<T> => {
    readings.add(work);
    void work.finally(() => readings.delete(work));
    return work;
  };
  const afterReadings = async () => {
    await Promise.allSettled([...readings]);
  };

  const lagSource = sources.consumerLag;
  let lagErrors: Counter<'group'> | undefined;
  if (lagSource) {
    // Scrapes that overlap share one reading instead of asking the broker twice.
    let lagReading: Promise<void> | null = null;
    const readLag = async () => {
      const results = await Promise.all(
        lagSource.groups.map(({ groupId, topics }) =>
          lagSource.read(groupId, topics).then(
            (rows) => ({ groupId, rows }),
            () => ({ groupId, rows: null }),
          ),
        ),
      );
      lag.reset();
      for (const { groupId, rows } of results) {
        if (!rows) lagErrors?.inc({ group: groupId });
        for (const r of rows ?? []) lag.set({ group: groupId, topic: r.topic, partition: String(r.partition) }, r.lag);
      }
    };
    const lag: Gauge<'group' | 'topic' | 'partition'> = new Gauge({
      name: 'kafka_consumer_lag',
      help: 'Messages of a partition its consumer group has not committed yet (end offset minus committed offset), read at scrape time',
      labelNames: ['group', 'topic', 'partition'] as const,
      registers: [registry],
      collect: () => (lagReading ??= reading(readLag().finally(() => (lagReading = null)))),
    });
  }

  const queueSource = sources.webhookQueue;
  if (queueSource) {
    // One count feeds both gauges: whichever is collected first reads it, the other waits for it.
    let queueReading: Promise<WebhookQueue | null> | null = null;
    const readQueue = () =>
      (queueReading ??= reading(
        queueSource().then(
          (q) => {
            queueReading = null;
            return q;
          },
          () => {
            queueReading = null;
            queryErrors.inc({ metric: 'webhook_queue_depth' });
            return null;
          },
        ),
      ));
    const depth: Gauge = new Gauge({
      name: 'webhook_queue_depth',
      help: 'Webhook deliveries due now that a dispatcher would claim (NaN when the count failed), read at scrape time; those of endpoints whose breaker is open are not counted',
      registers: [registry],
      collect: async () => depth.set((await readQueue())?.due ?? Number.NaN),
    });
    const breakersOpen: Gauge = new Gauge({
      name: 'webhook_endpoints_breaker_open',
      help: 'Active webhook endpoints whose circuit breaker is open or probing (NaN when the count failed), read at scrape time',
      registers: [registry],
      collect: async () => breakersOpen.set((await readQueue())?.breakersOpen ?? Number.NaN),
    });
  }

  const jobsSource = sources.importJobsByStatus;
  if (jobsSource) {
    const jobs: Gauge<'status'> = new Gauge({
      name: 'import_jobs',
      help: 'Import jobs not finished yet by status (Queued, Processing), counted at scrape time by a partial index; finished ones are in import_jobs_estimated_rows',
      labelNames: ['status'] as const,
      registers: [registry],
      collect: () =>
        reading(
          jobsSource().then(
            (counts) => {
              for (const status of unfinishedImportJobStatuses) jobs.set({ status }, counts.get(status) ?? 0);
            },
            () => {
              jobs.reset();
              queryErrors.inc({ metric: 'import_jobs' });
            },
          ),
        ),
    });
  }
  const estimateSource = sources.importJobsEstimate;
  if (estimateSource) {
    const estimate: Gauge = new Gauge({
      name: 'import_jobs_estimated_rows',
      help: "Import jobs kept, all statuses: PostgreSQL's estimate (pg_class.reltuples, as of the last VACUUM or ANALYZE; NaN before the first or when the reading failed)",
      registers: [registry],
      collect: () =>
        reading(
          estimateSource().then(
            (n) => estimate.set(n ?? Number.NaN),
            () => {
              estimate.set(Number.NaN);
              queryErrors.inc({ metric: 'import_jobs_estimated_rows' });
            },
          ),
        ),
    });
  }

  const deadLetterSource = sources.deadLetters;
  if (deadLetterSource) {
    const deadLetters: Gauge<'topic'> = new Gauge({
      name: 'connect_dead_letters',
      help: 'Messages a dead-letter topic retains (high minus low watermark) minus those replayed or purged, read at scrape time',
      labelNames: ['topic'] as const,
      registers: [registry],
      collect: () =>
        reading(
          deadLetterSource.read(deadLetterSource.topics).then(
            (depths) => {
              deadLetters.reset();
              for (const [topic, n] of depths) deadLetters.set({ topic }, n);
            },
            () => {
              deadLetters.reset();
              queryErrors.inc({ metric: 'connect_dead_letters' });
            },
          ),
        ),
    });
  }

  const retentionSource = sources.retention;
  if (retentionSource) {
    const limit = new Gauge({
      name: 'retention_limit_seconds',
      help: 'How long what is pruned is kept, by table (IMPORT_JOB_RETENTION_DAYS for import_jobs, DEAD_LETTER_RETENTION_DAYS for dead_letter_actions)',
      labelNames: ['table'] as const,
      registers: [registry],
    });
    for (const t of retentionSource.tables) limit.set({ table: t.table }, t.limitSeconds);
    const oldest: Gauge<'table'> = new Gauge({
      name: 'retention_oldest_age_seconds',
      help: 'Age of the oldest row kept that retention prunes, by table (import_jobs: since it finished; dead_letter_actions: since it was made, of those that hold no dead letter Kafka still retains; 0 when none), read at scrape time',
      labelNames: ['table'] as const,
      registers: [registry],
      collect: () =>
        reading(
          Promise.all(
            retentionSource.tables.map((t) =>
              t.oldestSeconds().then(
                (seconds) => oldest.set({ table: t.table }, seconds ?? 0),
                () => {
                  oldest.remove({ table: t.table });
                  queryErrors.inc({ metric: 'retention_oldest_age_seconds' });
                },
              ),
            ),
          ).then(() => undefined),
        ),
    });
  }

  const readinessSource = sources.readiness;
  if (readinessSource) {
    // Both gauges show one probe per scrape.
    let probe: Promise<Readiness> | null = null;
    const read = () => (probe ??= readinessSource().finally(() => (probe = null)));
    const ready: Gauge = new Gauge({
      name: 'worker_ready',
      help: 'Whether /readyz answers 200 at scrape time: every hosted kind started and its dependencies answer (1), else 0',
      registers: [registry],
      collect: async () => ready.set((await read()).ready ? 1 : 0),
    });
    registerDependencyGauge(registry, async () => (await read()).checks);
  }

  if (lagSource) {
    lagErrors = new Counter({
      name: 'kafka_consumer_lag_errors_total',
      help: 'Consumer lag readings of a group that failed at scrape time (the broker did not answer in time)',
      labelNames: ['group'] as const,
      registers: [registry],
      collect: afterReadings,
    });
    for (const { groupId } of lagSource.groups) lagErrors.inc({ group: groupId }, 0);
  }
  const queryErrors = new Counter({
    name: 'worker_scrape_query_errors_total',
    help: 'PostgreSQL readings at scrape time that failed or timed out, by the metric they feed',
    labelNames: ['metric'] as const,
    registers: [registry],
    collect: afterReadings,
  });
  if (queueSource) queryErrors.inc({ metric: 'webhook_queue_depth' }, 0);
  if (jobsSource) queryErrors.inc({ metric: 'import_jobs' }, 0);
  if (estimateSource) queryErrors.inc({ metric: 'import_jobs_estimated_rows' }, 0);
  if (deadLetterSource) queryErrors.inc({ metric: 'connect_dead_letters' }, 0);
  if (retentionSource) queryErrors.inc({ metric: 'retention_oldest_age_seconds' }, 0);

  return {
    registry,
    messages(kind, outcome, count = 1) {
      messages.inc({ kind, outcome }, count);
    },
    applyDuration(kind, seconds) {
      applyDuration.observe({ kind }, seconds);
    },
    webhookAttempt(outcome) {
      webhookDeliveries.inc({ outcome });
    },
    webhookBreaker(transition) {
      webhookBreakers.inc({ transition });
    },
    webhookListenLost(reason) {
      webhookListenLost.inc({ reason });
    },
    webhookLeaseRenewalFailed() {
      webhookLeaseRenewalsFailed.inc();
    },
    inboundChunk(outcome) {
      inboundChunks.inc({ outcome });
    },
    pruned(table, rows) {
      pruned.inc({ table }, rows);
    },
  };
}
