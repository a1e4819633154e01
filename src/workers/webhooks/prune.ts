import pg from 'pg';
import type { Config } from '../../shared/config.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { pruneEvents } from '../../shared/webhooks/feed.js';

/** The session advisory lock of the one dispatcher pruning now (pg_try_advisory_lock). */
export const pruneLockId = 7_239_014_562;

/**
 * Prunes events past EVENT_RETENTION_HOURS every EVENT_PRUNE_INTERVAL_MS, one dispatcher process
 * at a time: each interval, a dispatcher tries the advisory lock pruneLockId on a connection of its
 * own, opened for the round (pg_try_advisory_lock, never waiting; not one of the pool's, which may
 * have a single connection the pruning itself needs); one that gets it prunes (in bounded batches,
 * see pruneEvents) and lets it go, the others skip this interval. A pruner that dies (or whose
 * connection does) leaves no lock behind: PostgreSQL releases it with the session. Returns how
 * many events went, or null when another dispatcher held the lock.
 */
export async function pruneOnce(
  { pool, databaseUrl }: { pool: Pool; databaseUrl: string },
  retentionMs: number,
): Promise<number | null> {
  const lockHolder = new pg.Client({
    connectionString: databaseUrl,
    application_name: 'connect-webhooks-pruner',
    connectionTimeoutMillis: 10_000,
  });
  lockHolder.on('error', () => undefined); // a lost connection: its lock is gone; the next statement fails
  await lockHolder.connect();
  try {
    const { rows } = await lockHolder.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      pruneLockId,
    ]);
    if (!rows[0]?.locked) return null;
    return await pruneEvents(pool, retentionMs);
  } finally {
    await lockHolder.end().catch(() => undefined); // ends the session: the lock goes with it
  }
}

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
