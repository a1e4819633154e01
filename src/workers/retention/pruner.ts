import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { pruneImportJobs } from './import-jobs.js';
import { asTheOnePruner } from './one-pruner.js';

/** The session advisory lock of the one worker process pruning past retention now. */
export const retentionLockId = 7_239_014_563;

/** What one round pruned, by table (its parent's rows: import jobs with their chunks and drafts). */
export type Pruned = { importJobs: number };

/** One round: as the one pruner across replicas, or null when another process is pruning. */
export const pruneRetained = (pool: Pool, databaseUrl: string, retention: Config['retention'], signal?: AbortSignal) =>
  asTheOnePruner(databaseUrl, retentionLockId, 'connect-workers-pruner', async (): Promise<Pruned> => ({
    importJobs: await pruneImportJobs(pool, retention.importJobRetentionMs, { signal }),
  }));

/**
 * Every worker process, whatever kinds it hosts, tries a round each RETENTION_PRUNE_INTERVAL_MS
 * (issue 51): one prunes, the others skip; so any deployment with a worker prunes, and scaling
 * workers adds no pruning work.
 */
export function startRetentionPruner({
  config,
  logger,
  pool,
  onPruned,
}: {
  config: Config;
  logger: Logger;
  pool: Pool;
  onPruned?: (pruned: Pruned) => void;
}) {
  const log = logger.child({ task: 'retention' });
  const stopping = new AbortController();
  // One round at a time: a tick that finds the last round still going (a large backlog) skips.
  let running: Promise<void> | null = null;
  const round = async () => {
    try {
      const pruned = await pruneRetained(pool, config.database.url, config.retention, stopping.signal);
      if (pruned === null) return log.debug('another worker process is pruning; skipped this interval');
      onPruned?.(pruned);
      if (pruned.importJobs > 0) log.info(pruned, 'import jobs past their retention pruned');
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
