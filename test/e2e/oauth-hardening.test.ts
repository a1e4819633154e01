// Issue 12, the token items: a bounded access-token lifetime on verification, no signing key in
// plaintext in PostgreSQL, and a throttle on the token endpoint.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader } from 'jose';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyEncryptionKeyId, parseKeyEncryptionKey } from '../../src/gateway/oauth/key-encryption.js';
import { OAuthError } from '../../src/gateway/oauth/oauth-error.js';
import { oauthRoutes } from '../../src/gateway/oauth/routes.js';
import { createTokenThrottle } from '../../src/gateway/oauth/token-throttle.js';
import { createPool } from '../../src/shared/db/pool.js';
import { migrateUp, migrationsDir } from '../../src/shared/db/migrate.js';
import { createApiClient } from '../support/api-client.js';
import { createTestDatabase } from '../support/database.js';
import { createClientWithKey, createDemo } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import {
  accessToken,
  bearerToken,
  form,
  formHeaders,
  mintToken,
  requestToken,
  storedSigningKey,
  testKeyEncryptionKey,
  tokenPath,
} from './oauth-helpers.js';

const kek = testKeyEncryptionKey;
const clientLimit = 3;
const suite = useGatewaySuite({ env: () => ({ OAUTH_KEY_ENCRYPTION_KEY: kek }) });
const probePath = '/connect/v1/appointment-requests/apr_01JD2Z8K3M4N5P6Q7R8S9T0V1W';
const read = (token: string, api = suite.api) => api.get(probePath, { headers: bearerToken(token) });
const all = () => suite.demo.clients.all!;
const year = 365 * 86_400;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const newKek = () => randomBytes(32).toString('base64');

const otherGateways: TestGateway[] = [];
afterAll(async () => {
  await Promise.all(otherGateways.map((g) => g.stop()));
});
async function gateway(env: Record<string, string>, databaseUrl = suite.db.url) {
  const g = await startTestGateway(testConfig(databaseUrl, env));
  otherGateways.push(g);
  return { gateway: g, api: await createApiClient(g.url) };
}

describe('access token lifetime (OAUTH_TOKEN_TTL_SECONDS = 600)', () => {
  it('refuses a token minted with the signing key and a 100-year lifetime', async () => {
    await accessToken(suite.api, all()); // the shared signing key exists
    const now = nowSeconds();
    const res = await read(await mintToken(suite.pool, all().clientId, { expiresAt: now + 100 * year }));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_token');
    expect(res.body.error.message).toMatch(/lives longer/);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="connect", error="invalid_token"');
  });

  it('refuses a longer lifetime, an iat in the future, an old iat with a far exp, and no iat', async () => {
    const clientId = all().clientId;
    const now = nowSeconds();
    const cases: [string, Parameters<typeof mintToken>[2]][] = [
      ['a minute more than the TTL', { issuedAt: now, expiresAt: now + 660 }],
      ['iat an hour ahead', { issuedAt: now + 3600, expiresAt: now + 3600 + 300 }],
      ['iat older than the TTL, exp far ahead', { issuedAt: now - 700, expiresAt: now + year }],
      ['no iat', { claims: { iat: undefined } }],
    ];
    for (const [name, options] of cases) {
      const res = await read(await mintToken(suite.pool, clientId, options));
      expect(res.status, name).toBe(401);
      expect(res.body.error.code, name).toBe('invalid_token');
      expect(res.headers.get('www-authenticate'), name).toBe('Bearer realm="connect", error="invalid_token"');
    }
  });

  it('accepts the TTL exactly, and an iat a few seconds ahead (clock skew)', async () => {
    const clientId = all().clientId;
    const now = nowSeconds();
    expect((await read(await mintToken(suite.pool, clientId, { issuedAt: now, expiresAt: now + 600 }))).status).toBe(
      404,
    );
    const skewed = await mintToken(suite.pool, clientId, { issuedAt: now + 3, expiresAt: now + 603 });
    expect((await read(skewed)).status).toBe(404);
    expect((await read(await accessToken(suite.api, all()))).status).toBe(404); // what the endpoint issues
  });

  it('follows the verifying gateway’s OAUTH_TOKEN_TTL_SECONDS', async () => {
    const short = await gateway({ OAUTH_KEY_ENCRYPTION_KEY: kek, OAUTH_TOKEN_TTL_SECONDS: '60' });
    const token = await accessToken(suite.api, all()); // 600 s from the main gateway
    const res = await read(token, short.api);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_token');
    const own = await accessToken(short.api, all());
    expect((await read(own, short.api)).status).toBe(404);
    expect((await read(own)).status).toBe(404);
  });
});

describe('the signing key at rest', () => {
  it('is not readable as a plaintext PEM in the database: AES-256-GCM under OAUTH_KEY_ENCRYPTION_KEY', async () => {
    const token = await accessToken(suite.api, all());
    const { kid } = decodeProtectedHeader(token);
    const { rows } = await suite.pool.query('SELECT row_to_json(k)::text AS row FROM oauth_signing_keys k');
    expect(rows.length).toBeGreaterThan(0);
    for (const { row } of rows) expect(row).not.toMatch(/PRIVATE KEY|BEGIN/);
    const stored = await suite.pool.query(
      `SELECT kind, private_pkcs8, private_key_encrypted, encryption_key_id FROM oauth_signing_keys WHERE kid = $1`,
      [kid],
    );
    expect(stored.rows[0]).toMatchObject({
      kind: 'shared',
      private_pkcs8: null,
      encryption_key_id: parseKeyEncryptionKey(kek, 'test').id,
    });
    // Decrypted with the key, it is the key that signed the token; the blob itself is not the key.
    const key = await storedSigningKey(suite.pool, kek);
    expect(key.kid).toBe(kid);
    const der = key.privateKey.export({ format: 'der', type: 'pkcs8' });
    expect((stored.rows[0].private_key_encrypted as Buffer).includes(der.subarray(-65))).toBe(false);
    expect(await calculateJwkThumbprint(key.privateKey.export({ format: 'jwk' }) as never)).toBe(kid);
    // Another key does not decrypt it.
    await expect(storedSigningKey(suite.pool, newKek())).rejects.toThrow(/does not decrypt/);
  });

  it('with another OAUTH_KEY_ENCRYPTION_KEY a gateway issues no tokens (logged), still verifies, and makes no key', async () => {
    const { count: before } = (await suite.pool.query('SELECT count(*)::int AS count FROM oauth_signing_keys')).rows[0];
    const wrong = newKek();
    const other = await gateway({ OAUTH_KEY_ENCRYPTION_KEY: wrong });
    const res = await requestToken(other.api, all());
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('service_unavailable');
    const logged = other.gateway.logLines().find((l) => l.msg === 'no access-token signing key');
    expect(logged?.reason).toContain(keyEncryptionKeyId(Buffer.from(wrong, 'base64')));
    expect(JSON.stringify(other.gateway.logLines())).not.toContain(wrong);
    expect((await read(await accessToken(suite.api, all()), other.api)).status).toBe(404);
    const { count: after } = (await suite.pool.query('SELECT count(*)::int AS count FROM oauth_signing_keys')).rows[0];
    expect(after).toBe(before);
  });

  it('is re-encrypted by a gateway given a new key and the old one in OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS', async () => {
    const { kid } = await storedSigningKey(suite.pool, kek);
    const rotated = newKek();
    const other = await gateway({ OAUTH_KEY_ENCRYPTION_KEY: rotated, OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS: kek });
    const token = await accessToken(other.api, all());
    expect(decodeProtectedHeader(token).kid).toBe(kid); // the same key, now under the new encryption key
    expect((await storedSigningKey(suite.pool, rotated)).kid).toBe(kid);
    await expect(storedSigningKey(suite.pool, kek)).rejects.toThrow(/does not decrypt/);
    // The first gateway holds the key in memory and goes on issuing and verifying.
    expect((await read(await accessToken(suite.api, all()))).status).toBe(404);
    expect((await read(token)).status).toBe(404);
    // Put it back under the suite's key for the other tests.
    await gateway({ OAUTH_KEY_ENCRYPTION_KEY: kek, OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS: rotated }).then((g) =>
      accessToken(g.api, all()),
    );
    expect((await storedSigningKey(suite.pool, kek)).kid).toBe(kid);
  });

  it('without OAUTH_KEY_ENCRYPTION_KEY: a key per gateway, held in memory, its public half shared', async () => {
    // A replica key whose last token expired long ago is deleted when a gateway makes its own.
    const { privateKey: stale } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const staleJwk = stale.export({ format: 'jwk' });
    delete staleJwk.d;
    await suite.pool.query(
      `INSERT INTO oauth_signing_keys (kid, alg, public_jwk, kind, signs_until, created_at)
       VALUES ('stale-replica-key', 'ES256', $1, 'replica', now() - interval '3 days', now() - interval '4 days')`,
      [JSON.stringify(staleJwk)],
    );
    const own = await gateway({});
    const token = await accessToken(own.api, all());
    const { kid } = decodeProtectedHeader(token);
    expect(kid).not.toBe((await storedSigningKey(suite.pool, kek)).kid);
    const { rows } = await suite.pool.query('SELECT * FROM oauth_signing_keys WHERE kid = $1', [kid]);
    expect(rows[0]).toMatchObject({ kind: 'replica', private_pkcs8: null, private_key_encrypted: null });
    expect(rows[0].signs_until).toBeInstanceOf(Date);
    expect((await suite.pool.query(`SELECT 1 FROM oauth_signing_keys WHERE kid = 'stale-replica-key'`)).rowCount).toBe(
      0,
    );
    // A shared key exists that this gateway cannot use: said so.
    expect(
      own.gateway.logLines().some((l) => l.level === 40 && String(l.msg).includes('OAUTH_KEY_ENCRYPTION_KEY')),
    ).toBe(true);
    // Each verifies the other's tokens (the first learns the new kid from PostgreSQL).
    expect((await read(await accessToken(suite.api, all()), own.api)).status).toBe(404);
    await eventually(async () => ((await read(token)).status === 404 ? true : undefined), 15_000, 'key refresh');
    const jwks = await suite.api.get('/connect/v1/.well-known/jwks.json');
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(kid);
  });

  it('refuses a malformed OAUTH_KEY_ENCRYPTION_KEY at start, without echoing it', async () => {
    const envs: Record<string, string>[] = [
      { OAUTH_KEY_ENCRYPTION_KEY: 'c2hvcnQtc2VjcmV0' },
      { OAUTH_KEY_ENCRYPTION_KEY: kek, OAUTH_KEY_ENCRYPTION_KEYS_PREVIOUS: 'c2hvcnQtc2VjcmV0' },
    ];
    for (const env of envs) {
      const error = await startTestGateway(testConfig(suite.db.url, env)).catch((err: Error) => err);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/OAUTH_KEY_ENCRYPTION_KEYS?(_PREVIOUS)?: must be 32 random bytes/);
      expect((error as Error).message).not.toContain('c2hvcnQtc2VjcmV0');
    }
  });

  it('migration 0009 retires a key stored in plaintext; its tokens verify until they expire', async () => {
    const db = await createTestDatabase();
    const pool = createPool(db.url, 2, 'test');
    pool.on('error', () => undefined);
    try {
      // Back to the schema before 0009, with a key stored the old way.
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        await runner({
          dbClient: client,
          dir: migrationsDir,
          direction: 'down',
          file: '0009_oauth_signing_key_encryption',
          migrationsTable: 'pgmigrations',
          checkOrder: false,
          singleTransaction: true,
          log: () => undefined,
        });
      } finally {
        await client.end();
      }
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
      const jwk = privateKey.export({ format: 'jwk' });
      delete jwk.d;
      const oldKid = await calculateJwkThumbprint(jwk as never);
      await pool.query('INSERT INTO oauth_signing_keys (kid, alg, public_jwk, private_pkcs8) VALUES ($1, $2, $3, $4)', [
        oldKid,
        'ES256',
        JSON.stringify(jwk),
        pem,
      ]);

      expect(await migrateUp(db.url)).toContain('0009_oauth_signing_key_encryption');
      const { rows } = await pool.query('SELECT * FROM oauth_signing_keys');
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ kid: oldKid, kind: 'shared', private_pkcs8: null, private_key_encrypted: null });
      expect(rows[0].signs_until).toBeInstanceOf(Date);
      // A gateway of the previous version can no longer store a key in plaintext.
      await expect(
        pool.query(
          `INSERT INTO oauth_signing_keys (kid, alg, public_jwk, private_pkcs8) VALUES ('x', 'ES256', '{}', $1)`,
          [pem],
        ),
      ).rejects.toMatchObject({ code: '23514' });

      const demo = await createDemo(pool);
      const upgraded = await gateway({ OAUTH_KEY_ENCRYPTION_KEY: kek }, db.url);
      const token = await accessToken(upgraded.api, demo.clients.all!);
      expect(decodeProtectedHeader(token).kid).not.toBe(oldKid); // a new key, stored encrypted
      const old = await mintToken(pool, demo.clients.all!.clientId, { key: { kid: oldKid, pem } });
      expect((await read(old, upgraded.api)).status).toBe(404);
      await upgraded.gateway.stop();
      otherGateways.splice(otherGateways.indexOf(upgraded.gateway), 1);
    } finally {
      await pool.end();
      await db.drop();
    }
  });
});

describe('the token endpoint throttle', () => {
  let strict: { gateway: TestGateway; api: Awaited<ReturnType<typeof createApiClient>> };
  beforeAll(async () => {
    strict = await gateway({ OAUTH_KEY_ENCRYPTION_KEY: kek, OAUTH_TOKEN_CLIENT_LIMIT_PER_MINUTE: String(clientLimit) });
  });

  it('answers the request over the per-client limit with 429 slow_down and Retry-After', async () => {
    const c = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    for (let i = 0; i < clientLimit; i++) expect((await requestToken(strict.api, c)).status).toBe(200);
    const limited = await requestToken(strict.api, c);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'slow_down', error_description: expect.stringMatching(/retry after/) });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get('cache-control')).toBe('no-store');
    // Another client is not affected.
    const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    expect((await requestToken(strict.api, other)).status).toBe(200);
  });

  it("does not count failed authentications against a client's budget (nobody else can use it up)", async () => {
    const c = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    for (let i = 0; i < clientLimit + 2; i++) {
      const res = await strict.api.post(tokenPath, {
        headers: formHeaders,
        rawBody: form({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: all().apiKey }),
      });
      expect(res.status).toBe(401);
    }
    for (let i = 0; i < clientLimit; i++) expect((await requestToken(strict.api, c)).status).toBe(200);
    expect((await requestToken(strict.api, c)).status).toBe(429);
  });

  it('throttles per client address (IPv6 by /64) the requests that do not authenticate, never one that does', async () => {
    const throttle = createTokenThrottle({ tokenClientLimitPerMinute: 100, tokenAddressLimitPerMinute: 2 });
    let issued = 0;
    const [route] = oauthRoutes(
      {
        issue: async ({ form }) => {
          if (form.client_secret !== 'good') throw new OAuthError('invalid_client', 'wrong secret');
          issued++;
          return { access_token: 'x', token_type: 'Bearer' as const, expires_in: 600, scope: 'appointments.read' };
        },
        keys: undefined as never,
        throttle,
      },
      { ...suite.config.oauth, tokenClientLimitPerMinute: 100, tokenAddressLimitPerMinute: 2 },
    );
    const call = (remoteAddress: string, secret = 'bad') =>
      route!.handler({
        params: undefined,
        query: undefined,
        body: { client_secret: secret },
        client: undefined as never,
        requestId: 'r',
        correlationId: 'c',
        header: () => '',
        remoteAddress,
      } as never);
    expect((await call('203.0.113.7')).status).toBe(401);
    expect((await call('::ffff:203.0.113.7')).status).toBe(401); // the same IPv4 address
    const limited = await call('203.0.113.7');
    expect(limited).toMatchObject({ status: 429, body: { error: 'slow_down' } });
    expect(Number(limited.headers!['Retry-After'])).toBeGreaterThan(0);
    expect((await call('203.0.113.7', 'good')).status).toBe(200); // a valid secret from there still is served
    expect((await call('203.0.113.8')).status).toBe(401);
    expect((await call('2001:db8:1:2::1')).status).toBe(401);
    expect((await call('2001:db8:1:2:ffff::2')).status).toBe(401);
    expect((await call('2001:db8:1:2::3')).status).toBe(429); // same /64
    expect((await call('2001:db8:1:3::1')).status).toBe(401);
    expect(issued).toBe(1);
  });

  it('throttles per client address over HTTP', async () => {
    const byAddress = await gateway({ OAUTH_KEY_ENCRYPTION_KEY: kek, OAUTH_TOKEN_ADDRESS_LIMIT_PER_MINUTE: '2' });
    const bad = () =>
      byAddress.api.post(tokenPath, {
        headers: formHeaders,
        rawBody: form({ grant_type: 'client_credentials', client_id: all().clientId, client_secret: 'wrong' }),
      });
    expect((await requestToken(byAddress.api, all())).status).toBe(200); // not counted per address
    expect((await bad()).status).toBe(401);
    expect((await bad()).status).toBe(401);
    const limited = await bad();
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('slow_down');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await requestToken(byAddress.api, suite.demo.clients['appointments.read']!)).status).toBe(200);
  });

  it('is documented: 429 with the OAuth error body and Retry-After', () => {
    const doc = strict.api.doc as any;
    const op = doc.paths[tokenPath].post;
    expect(op.responses['429'].content['application/json'].schema.$ref).toBe('#/components/schemas/OAuthErrorResponse');
    expect(op.responses['429'].headers['Retry-After']).toBeDefined();
    expect(doc.components.schemas.OAuthErrorResponse.properties.error.enum).toContain('slow_down');
    expect(op.description).toMatch(
      /Throttled per gateway replica: 3 requests per 60 s .* and 300 per 60 s that do not/,
    );
  });
});
