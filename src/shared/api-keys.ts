import { createHash, randomBytes } from 'node:crypto';

// An API key: `cis_` + 8 hex characters (public prefix, safe to show and log) + `_` +
// 43 base64url characters (256 random bits). Only sha256(key) and the prefix are stored.
export const apiKeyPattern = /^cis_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$/;

export type NewApiKey = { key: string; prefix: string; hash: Buffer };

export function generateApiKey(): NewApiKey {
  const prefix = `cis_${randomBytes(4).toString('hex')}`;
  const key = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

export const hashApiKey = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();
