import type { Pool } from '../../shared/db/pool.js';
import { unavailable } from '../../shared/errors.js';
import { findApiKeyByHash, type ApiKeyRecord } from './api-key-store.js';
import { createKnownKeys } from './known-keys.js';

type CacheEntry = { record: ApiKeyRecord | null; fetchedAt: number };
const maxCacheEntries = 10_000;
/** How long a cached answer still serves while the credential store is unreachable. */
export const staleIfErrorMs = 15 * 60_000;

export type KeyRecords = {
  /**
   * The stored record of the API key with this sha256, or null when no such key exists. A key
   * that does not exist costs no query (see KnownKeys); one that does is read from PostgreSQL when
   * its cached record is older than maxAgeMs.
   */
  lookup(hash: Buffer, maxAgeMs: number): Promise<ApiKeyRecord | null>;
};

/**
 * API-key records for both credentials that present a key: the Bearer API key and the token
 * endpoint's client secret. Only keys that exist are cached, so a flood of made-up keys cannot
 * push real clients' records out. While PostgreSQL is unreachable, a record fetched within
 * staleIfErrorMs is used again (nothing can be revoked meanwhile: revoking writes to the same
 * database), so known clients can still read the health report that tells them the database is down.
 */
export function createKeyRecords(pool: Pool): KeyRecords {
  const known = createKnownKeys(pool);
  const cache = new Map<string, CacheEntry>();
  return {
    async lookup(hash, maxAgeMs) {
      const cacheKey = hash.toString('hex');
      const hit = cache.get(cacheKey);
      if (hit && Date.now() - hit.fetchedAt < maxAgeMs) return hit.record;
      if (!hit && !(await known.has(hash))) return null;
      let record: ApiKeyRecord | null;
      try {
        record = await findApiKeyByHash(pool, hash);
      } catch {
        if (hit && Date.now() - hit.fetchedAt < staleIfErrorMs) return hit.record;
        throw unavailable('The credential store');
      }
      cache.delete(cacheKey); // re-inserted last: the oldest entries go first
      if (cache.size >= maxCacheEntries) cache.delete(cache.keys().next().value!);
      cache.set(cacheKey, { record, fetchedAt: Date.now() });
      return record;
    },
  };
}
