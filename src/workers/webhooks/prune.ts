import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { pruneEvents } from '../../shared/webhooks/feed.js';

/**
 * Prunes events past EVENT_RETENTION_HOURS every EVENT_PRUNE_INTERVAL_MS (in each dispatcher
 * process: pruning is idempotent, so several side by side only repeat each other's no-op).
 */
export function startEventPruner({ events, logger, pool }: { events: Config['events']; logger: Logger; pool: Pool }) {
  const log = logger.child({ worker: 'webhooks', task: 'prune-events' });
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      try {
        const pruned = await pruneEvents(pool, events.retentionMs);
        if (pruned > 0) log.info({ pruned }, 'events past their retention pruned');
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
