import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { pruneDeadLetterRecords, type DeadLetterOffsets } from './dead-letters.js';
import { pruneImportJobs } from './import-jobs.js';
import { asTheOnePruner } from './one-pruner.js';

/** The session advisory lock of the one worker process pruning past retention now. */
export const retentionLockId = 7_239_014_563;

/**
 * What one round pruned, by table: import jobs (with their chunks and drafts), dead-letter
 * actions, and the marks of the dead letters they handled.
 */
export type Pruned = { importJobs: number; deadLetterActions: number; deadLettersHandled: number };

/** The tables of `Pruned`, as the metrics name them (retention_pruned_total{table}). */
export const prunedTables = {
  importJobs: 'import_jobs',
  deadLetterActions: 'dead_letter_actions',
  deadLettersHandled: 'dead_letters_handled',
} as const satisfies Record<keyof Pruned, string>;

/**
 * One round: as the one pruner across replicas, or null when another process is pruning. Each
 * table in its turn, in bounded batches; `signal` ends the round between batches. `deadLetterOffsets`
 * reads a dead-letter topic's watermarks (without it, no mark of a handled dead letter goes).
 */
export const pruneRetained = (
  pool: Pool,
  databaseUrl: string,
  retention: Pick<Config['retention'], 'importJobRetentionMs' | 'deadLetterRetentionMs'>,
  { signal, deadLetterOffsets }: { signal?: AbortSignal; deadLetterOffsets?: DeadLetterOffsets } = {},
) =>
  asTheOnePruner(databaseUrl, retentionLockId, 'connect-workers-pruner', async (): Promise<Pruned> => {
    const importJobs = await pruneImportJobs(pool, retention.importJobRetentionMs, { signal });
    const deadLetters = await pruneDeadLetterRecords(pool, retention.deadLetterRetentionMs, {
      offsets: deadLetterOffsets,
      signal,
    });
    return { importJobs, deadLetterActions: deadLetters.actions, deadLettersHandled: deadLetters.marks };
  });

/**
 * Every worker process, whatever kinds it hosts, tries a round each RETENTION_PRUNE_INTERVAL_MS
 * (issue 51): one prunes, the others skip; so any deployment with a worker prunes, and scaling
 * workers adds no pruning work.
 */
export function startRetentionPruner({
  config,
  logger,
  pool,
  deadLetterOffsets,
  onPruned,
}: {
  config: Config;
  logger: Logger;
  pool: Pool;
  deadLetterOffsets?: DeadLetterOffsets;
  onPruned?: (pruned: Pruned) => void;
}) {
  const log = logger.child({ task: 'retention' });
  const stopping = new AbortController();
  // One round at a time: a tick that finds the last round still going (a large backlog) skips.
  let running: Promise<void> | null = null;
  const round = async () => {
    try {
      const pruned = await pruneRetained(pool, config.database.url, config.retention, {
        signal: stopping.signal,
        deadLetterOffsets,
      });
      if (pruned === null) return log.debug('another worker process is pruning; skipped this interval');
      onPruned?.(pruned);
      if (Object.values(pruned).some((n) => n > 0)) log.info(pruned, 'rows past their retention pruned');
    } catch (err) {
      log.warn({ err }, 'pruning past retention failed; tried again at the next interval');
    }
  };
  const timer = setInterval(() => {
    running ??= round().finally(() => (running = null));
  }, config.retention.pruneIntervalMs);
  return {
    async stop() {
      clearInterval(timer);
      stopping.abort(); // the round under way ends after its batch
      await running;
    },
  };
}
