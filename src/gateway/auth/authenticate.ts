import { timingSafeEqual } from 'node:crypto';
import { apiKeyPattern, hashApiKey } from '../../shared/api-keys.js';
import type { Pool } from '../../shared/db/pool.js';
import { AppError, unavailable } from '../../shared/errors.js';
import { findApiKeyByHash, type ApiKeyRecord } from './api-key-store.js';

export type AuthenticatedClient = {
  clientId: string;
  tenantId: string;
  keyId: string;
  scopes: ReadonlySet<string>;
  rateLimitPerMinute: number | null;
  /** The client's own upload quota; null: the gateway's default. */
  uploadBytesPerSecond: number | null;
};

export type Authenticator = (authorization: string) => Promise<AuthenticatedClient>;

type CacheEntry = { record: ApiKeyRecord | null; fetchedAt: number };
const maxCacheEntries = 10_000;
/** How long a cached answer still serves while the credential store is unreachable. */
export const staleIfErrorMs = 15 * 60_000;

/**
 * API-key authentication. Key records (also "unknown") are cached for ttlMs, so a revoked
 * key stops working within ttlMs; expiry is checked on every request. While PostgreSQL is
 * unreachable, an answer fetched within staleIfErrorMs is used again (nothing can be revoked
 * meanwhile: revoking writes to the same database), so known clients can still read the health
 * report that tells them the database is down.
 */
export function createApiKeyAuthenticator(pool: Pool, ttlMs: number, now: () => number = Date.now): Authenticator {
  const cache = new Map<string, CacheEntry>();

  async function lookup(hash: Buffer): Promise<ApiKeyRecord | null> {
    const cacheKey = hash.toString('hex');
    const hit = cache.get(cacheKey);
    if (hit && now() - hit.fetchedAt < ttlMs) return hit.record;
    let record: ApiKeyRecord | null;
    try {
      record = await findApiKeyByHash(pool, hash);
    } catch {
      if (hit && now() - hit.fetchedAt < staleIfErrorMs) return hit.record;
      throw unavailable('The credential store');
    }
    if (cache.size >= maxCacheEntries) cache.delete(cache.keys().next().value!);
    cache.set(cacheKey, { record, fetchedAt: now() });
    return record;
  }

  return async (authorization) => {
    if (!authorization) throw new AppError('missing_credential', 'Send Authorization: Bearer <api key>.');
    const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
    if (!match || !apiKeyPattern.test(match[1]!)) {
      throw new AppError('malformed_credential', 'The Authorization header must be "Bearer <api key>".');
    }
    const hash = hashApiKey(match[1]!);
    const record = await lookup(hash);
    if (!record || !timingSafeEqual(record.keyHash, hash)) {
      throw new AppError('invalid_credential', 'The API key is not known.');
    }
    if (record.revokedAt) throw new AppError('revoked_credential', 'The API key has been revoked.');
    if (record.expiresAt && record.expiresAt.getTime() <= now()) {
      throw new AppError('expired_credential', 'The API key has expired.');
    }
    return {
      clientId: record.clientId,
      tenantId: record.tenantId,
      keyId: record.keyId,
      scopes: new Set(record.scopes),
      rateLimitPerMinute: record.rateLimitPerMinute,
      uploadBytesPerSecond: record.uploadBytesPerSecond,
    };
  };
}
