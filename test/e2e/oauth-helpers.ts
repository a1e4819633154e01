// Helpers of the /connect/v1 tests (oauth*.test.ts, appointment*.test.ts): getting access tokens
// the way a client does, and minting tokens with the gateway's own stored key for negative cases.
import { createPrivateKey, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';
import { decryptPrivateKey, parseKeyEncryptionKey } from '../../src/gateway/oauth/key-encryption.js';
import type { Pool } from '../../src/shared/db/pool.js';
import type { ApiClient } from '../support/api-client.js';

/**
 * OAUTH_KEY_ENCRYPTION_KEY of the gateways of a test file that mints tokens with the stored key
 * (made up per test process: no secret of any real deployment).
 */
export const testKeyEncryptionKey = randomBytes(32).toString('base64');

export const tokenPath = '/connect/v1/oauth/token';
export const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

export const form = (params: Record<string, string>) => new URLSearchParams(params).toString();

export const basicAuth = (clientId: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
});

export async function requestToken(
  api: ApiClient,
  client: { clientId: string; apiKey: string },
  extra: Record<string, string> = {},
) {
  return api.post(tokenPath, {
    headers: formHeaders,
    rawBody: form({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.apiKey,
      ...extra,
    }),
  });
}

/** An access token for the client (fails the test if the endpoint refuses). */
export async function accessToken(api: ApiClient, client: { clientId: string; apiKey: string }, scope?: string) {
  const res = await requestToken(api, client, scope ? { scope } : {});
  if (res.status !== 200) throw new Error(`token endpoint answered ${res.status}: ${res.text}`);
  return res.body.access_token as string;
}

export const bearerToken = (token: string) => ({ authorization: `Bearer ${token}` });

/**
 * The newest shared signing key, decrypted with the encryption key the gateway was given (as an
 * attacker holding both the database and that key could).
 */
export async function storedSigningKey(
  pool: Pool,
  encryptionKey = testKeyEncryptionKey,
): Promise<{ kid: string; privateKey: KeyObject }> {
  const { rows } = await pool.query(
    `SELECT kid, private_key_encrypted FROM oauth_signing_keys
      WHERE private_key_encrypted IS NOT NULL AND signs_until IS NULL ORDER BY created_at DESC LIMIT 1`,
  );
  if (!rows[0]) throw new Error('no shared signing key stored (is OAUTH_KEY_ENCRYPTION_KEY set?)');
  const der = decryptPrivateKey(
    parseKeyEncryptionKey(encryptionKey, 'test key'),
    rows[0].kid,
    rows[0].private_key_encrypted,
  );
  return { kid: rows[0].kid, privateKey: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }) };
}

/**
 * Signs a token with the gateway's newest stored key (decrypted with testKeyEncryptionKey) or
 * another key, with claims and header to override.
 */
export async function mintToken(
  pool: Pool,
  clientId: string,
  options: {
    claims?: JWTPayload;
    header?: Record<string, unknown>;
    expiresAt?: number;
    issuedAt?: number;
    key?: { kid: string; pem: string };
  } = {},
): Promise<string> {
  const key = options.key
    ? { kid: options.key.kid, privateKey: createPrivateKey(options.key.pem) }
    : await storedSigningKey(pool);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: 'urn:connect-integration',
    aud: 'connect/v1',
    sub: clientId,
    client_id: clientId,
    scope: 'appointments.read appointments.write',
    iat: options.issuedAt ?? now,
    exp: options.expiresAt ?? now + 300,
    jti: randomUUID(),
    ...options.claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt', ...options.header })
    .sign(key.privateKey);
}
