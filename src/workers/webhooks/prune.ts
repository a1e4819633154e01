import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { pruneEvents } from '../../shared/webhooks/feed.js';
import { asTheOnePruner } from '../retention/one-pruner.js';

/** The session advisory lock of the one dispatcher pruning now (pg_try_advisory_lock). */
export const pruneLockId = 7_239_014_562;

/**
 * Prunes events past EVENT_RETENTION_HOURS every EVENT_PRUNE_INTERVAL_MS, one dispatcher process
 * at a time (asTheOnePruner, in bounded batches: pruneEvents). Returns how many events went, or
 * null when another dispatcher held the lock.
 */
export const pruneOnce = ({ pool, databaseUrl }: { pool: Pool; databaseUrl: string }, retentionMs: number) =>
  asTheOnePruner(databaseUrl, pruneLockId, 'connect-webhooks-pruner', () => pruneEvents(pool, retentionMs));

export function startEventPruner({
  events,
  logger,
  pool,
  databaseUrl,
}: {
  events: Config['events'];
  logger: Logger;
  pool: Pool;
  databaseUrl: string;
}) {
  const log = logger.child({ worker: 'webhooks', task: 'prune-events' });
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const pruned = await pruneOnce({ pool, databaseUrl }, events.retentionMs);
        if (pruned === null) log.debug('another dispatcher is pruning; skipped this interval');
        else if (pruned > 0) log.info({ pruned }, 'events past their retention pruned');
      } catch (err) {
        log.warn({ err }, 'pruning events failed; tried again at the next interval');
      }
    });
  }, events.pruneIntervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
