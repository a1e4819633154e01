import type { Pool } from '../../shared/db/pool.js';
import { unavailable } from '../../shared/errors.js';

/** At most one refresh query per this many ms, however many unknown keys arrive. */
export const knownKeysRefreshMs = 100;
/** Keys created this long before the last refresh are read again (a creating transaction may commit late). */
const overlap = '10 minutes';

const refreshSql = `
  SELECT now() AS at,
         array(SELECT key_hash FROM api_keys WHERE $1::timestamptz IS NULL OR created_at > $1::timestamptz - interval '${overlap}') AS hashes`;

export type KnownKeys = {
  /** Whether an API key with this sha256 exists (revoked and expired ones included). */
  has(hash: Buffer): Promise<boolean>;
};

/**
 * The hashes of all stored API keys, in memory, so that a presented key that does not exist is
 * told apart without a query: a flood of made-up keys (from any number of addresses) costs
 * PostgreSQL at most one refresh per knownKeysRefreshMs, while a valid key is never refused
 * for what others sent. A hash not in the set waits for the next refresh (which reads the keys
 * created since the last one), so a key created a moment ago works at once. Hashes are only
 * added: a deleted key stays "known" and its record lookup answers it.
 */
export function createKnownKeys(pool: Pool): KnownKeys {
  const hashes = new Set<string>();
  let since: Date | null = null;
  let lastStart = -Infinity;
  let running: Promise<void> | null = null; // its query is sent
  let queued: Promise<void> | null = null; // the next one, shared by every miss until it starts

  async function query(): Promise<void> {
    lastStart = Date.now();
    try {
      const { rows } = await pool.query(refreshSql, [since]);
      for (const h of rows[0].hashes as Buffer[]) hashes.add(h.toString('hex'));
      since = rows[0].at;
    } catch {
      throw unavailable('The credential store');
    }
  }

  /** A miss waits for a refresh that starts after it (a running one may predate its key). */
  function refresh(): Promise<void> {
    queued ??= (async () => {
      await running?.catch(() => undefined);
      const wait = lastStart + knownKeysRefreshMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      queued = null;
      running = query().finally(() => {
        running = null;
      });
      return running;
    })();
    return queued;
  }

  return {
    async has(hash) {
      const hex = hash.toString('hex');
      if (hashes.has(hex)) return true;
      await refresh();
      return hashes.has(hex);
    },
  };
}
