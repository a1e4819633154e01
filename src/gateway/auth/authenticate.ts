import { timingSafeEqual } from 'node:crypto';
import { apiKeyPattern, hashApiKey } from '../../shared/api-keys.js';
import { AppError } from '../../shared/errors.js';
import type { KeyRecords } from './key-records.js';

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

/**
 * API-key authentication. Key records are cached for ttlMs, so a revoked key stops working
 * within ttlMs; expiry is checked on every request.
 */
export function createApiKeyAuthenticator(records: KeyRecords, ttlMs: number): Authenticator {
  return async (authorization) => {
    if (!authorization) throw new AppError('missing_credential', 'Send Authorization: Bearer <api key>.');
    const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
    if (!match || !apiKeyPattern.test(match[1]!)) {
      throw new AppError('malformed_credential', 'The Authorization header must be "Bearer <api key>".');
    }
    const hash = hashApiKey(match[1]!);
    const record = await records.lookup(hash, ttlMs);
    if (!record || !timingSafeEqual(record.keyHash, hash)) {
      throw new AppError('invalid_credential', 'The API key is not known.');
    }
    if (record.revokedAt) throw new AppError('revoked_credential', 'The API key has been revoked.');
    if (record.expiresAt && record.expiresAt.getTime() <= Date.now()) {
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
