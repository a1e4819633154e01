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
export const pruneRetained = (pool: Pool, databaseUrl: string, retention: Config['retention']) =>
  asTheOnePruner(databaseUrl, retentionLockId, 'connect-workers-pruner', async (): Promise<Pruned> => ({
    importJobs: await pruneImportJobs(pool, retention.importJobRetentionMs),
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
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const pruned = await pruneRetained(pool, config.database.url, config.retention);
        if (pruned === null) return log.debug('another worker process is pruning; skipped this interval');
        onPruned?.(pruned);
        if (pruned.importJobs > 0) log.info(pruned, 'import jobs past their retention pruned');
      } catch (err) {
        log.warn({ err }, 'pruning past retention failed; tried again at the next interval');
      }
    });
  }, config.retention.pruneIntervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
