import { generateKeyPairSync } from 'node:crypto';
import { compileErrors, validate } from '@readme/openapi-parser';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { routeScopes } from '../../src/gateway/auth/route-scopes.js';
import { createApiClient } from '../support/api-client.js';
import { bearer, createClientWithKey, revokeKey, setRateLimit } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import {
  accessToken,
  basicAuth,
  bearerToken,
  form,
  formHeaders,
  mintToken,
  requestToken,
  testKeyEncryptionKey,
  tokenPath,
} from './oauth-helpers.js';

// One shared signing key, stored encrypted, that the negative cases mint tokens with.
const withKey = { OAUTH_KEY_ENCRYPTION_KEY: testKeyEncryptionKey };
const suite = useGatewaySuite({ env: () => withKey });
const jwksPath = '/connect/v1/.well-known/jwks.json';
const probePath = '/connect/v1/appointment-requests/apr_01JD2Z8K3M4N5P6Q7R8S9T0V1W';
const all = () => suite.demo.clients.all!;
const read = (token: string, path = probePath) => suite.api.get(path, { headers: bearerToken(token) });

const otherGateways: TestGateway[] = [];
afterAll(async () => {
  await Promise.all(otherGateways.map((g) => g.stop()));
});

describe('the token endpoint (OAuth 2.0 client credentials)', () => {
  it('issues an RFC 9068 access token to form credentials, verifiable with the JWKS', async () => {
    const res = await requestToken(suite.api, all());
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 600,
      scope: 'appointments.read appointments.write',
    });
    const header = decodeProtectedHeader(res.body.access_token);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: expect.any(String) });
    const claims = decodeJwt(res.body.access_token);
    expect(claims).toMatchObject({
      iss: 'urn:connect-integration',
      aud: 'connect/v1',
      sub: all().clientId,
      client_id: all().clientId,
      scope: 'appointments.read appointments.write',
      jti: expect.any(String),
    });
    expect(claims.exp! - claims.iat!).toBe(600);
    expect(Math.abs(claims.iat! - Date.now() / 1000)).toBeLessThan(10);

    const jwks = await suite.api.get(jwksPath);
    expect(jwks.status).toBe(200);
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);
    const verified = await jwtVerify(res.body.access_token, createLocalJWKSet(jwks.body), {
      issuer: 'urn:connect-integration',
      audience: 'connect/v1',
      typ: 'at+jwt',
    });
    expect(verified.payload.sub).toBe(all().clientId);
    expect(JSON.stringify(jwks.body)).not.toMatch(/"d":/); // never a private part
  });

  it('takes HTTP Basic client authentication and narrows to the scope asked for', async () => {
    const res = await suite.api.post(tokenPath, {
      headers: { ...formHeaders, ...basicAuth(all().clientId, all().apiKey) },
      rawBody: form({ grant_type: 'client_credentials', scope: 'appointments.read' }),
    });
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('appointments.read');
    expect(decodeJwt(res.body.access_token).scope).toBe('appointments.read');
  });

  it('grants only the appointment scopes of the key', async () => {
    const readOnly = suite.demo.clients['appointments.read']!;
    const res = await requestToken(suite.api, readOnly);
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('appointments.read');
    const widen = await requestToken(suite.api, readOnly, { scope: 'appointments.read appointments.write' });
    expect(widen.status).toBe(400);
    expect(widen.body).toEqual({
      error: 'invalid_scope',
      error_description: expect.stringContaining('appointments.write'),
    });
    const other = await requestToken(suite.api, all(), { scope: 'connect.jobs.write' });
    expect(other.body.error).toBe('invalid_scope');
    // A key with /api scopes only gets no token at all.
    const inventory = await requestToken(suite.api, suite.demo.clients['connect.inventory.read']!);
    expect(inventory.status).toBe(400);
    expect(inventory.body.error).toBe('invalid_scope');
  });

  it('answers invalid_client (401) to a bad secret, a foreign key, an unknown client or no authentication', async () => {
    const foreign = suite.demo.clients['appointments.write']!;
    const cases = [
      { client_id: all().clientId, client_secret: `${all().apiKey.slice(0, -4)}AAAA` },
      { client_id: all().clientId, client_secret: foreign.apiKey }, // a valid key of another client
      { client_id: all().clientId, client_secret: 'not-a-key' },
      { client_id: '5d7ab0b5-0000-4000-8000-000000000000', client_secret: all().apiKey },
      { client_id: 'nope', client_secret: all().apiKey },
    ];
    for (const creds of cases) {
      const res = await suite.api.post(tokenPath, {
        headers: formHeaders,
        rawBody: form({ grant_type: 'client_credentials', ...creds }),
      });
      expect(res.status, JSON.stringify(creds)).toBe(401);
      expect(res.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    }
    const basic = await suite.api.post(tokenPath, {
      headers: { ...formHeaders, ...basicAuth(all().clientId, 'wrong') },
      rawBody: form({ grant_type: 'client_credentials' }),
    });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic /);
    const none = await suite.api.post(tokenPath, {
      headers: formHeaders,
      rawBody: form({ grant_type: 'client_credentials' }),
    });
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('invalid_client');
  });

  it('refuses a revoked or expired key as client secret', async () => {
    const revoked = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    expect((await requestToken(suite.api, revoked)).status).toBe(200);
    await revokeKey(suite.pool, revoked.keyId);
    const afterRevoke = await requestToken(suite.api, revoked); // at once: no cache on the token endpoint
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.body).toEqual({ error: 'invalid_client', error_description: expect.stringMatching(/revoked/) });

    const expired = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read', [
      '--expires-at',
      '2020-01-01T00:00:00Z',
    ]);
    const res = await requestToken(suite.api, expired);
    expect(res.status).toBe(401);
    expect(res.body.error_description).toMatch(/expired/);
  });

  it('answers RFC 6749 request errors with 400', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      suite.api.post(tokenPath, { headers: { ...formHeaders, ...headers }, rawBody: body });
    const creds = { client_id: all().clientId, client_secret: all().apiKey };
    const missing = await post(form(creds));
    expect(missing.body).toEqual({
      error: 'invalid_request',
      error_description: expect.stringContaining('grant_type'),
    });
    const password = await post(form({ ...creds, grant_type: 'password' }));
    expect(password.status).toBe(400);
    expect(password.body.error).toBe('unsupported_grant_type');
    const repeated = await post(
      `${form({ ...creds, grant_type: 'client_credentials' })}&grant_type=client_credentials`,
    );
    expect(repeated.body.error).toBe('invalid_request');
    const both = await post(
      form({ ...creds, grant_type: 'client_credentials' }),
      basicAuth(creds.client_id, creds.client_secret),
    );
    expect(both.status).toBe(400);
    expect(both.body.error).toBe('invalid_request');
    const json = await suite.api.post(tokenPath, { body: { grant_type: 'client_credentials', ...creds } });
    expect(json.status).toBe(415); // transport-level errors keep the standard shape
    expect(json.body.error.code).toBe('unsupported_media_type');
  });
});

describe('access tokens on /connect/v1', () => {
  it('accepts a valid token, with the rate-limit headers', async () => {
    const res = await read(await accessToken(suite.api, all()));
    expect(res.status).toBe(404); // authenticated: the (made-up) request is just not found
    expect(res.body.error.code).toBe('resource_not_found');
    expect(res.headers.get('ratelimit')).toMatch(/^"client";r=\d+;t=\d+$/);
  });

  it('answers 401 with a stable code to a missing, malformed, tampered, expired or foreign token', async () => {
    const clientId = all().clientId;
    const valid = await accessToken(suite.api, all());
    const [h, p, s] = valid.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, scope: 'appointments.read appointments.write admin' })).toString('base64url')}.${s}`;
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const kid = decodeProtectedHeader(valid).kid!;
    const foreignKey = { kid, pem: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string };
    const now = Math.floor(Date.now() / 1000);
    const unsecured = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid })).toString('base64url')}.${p}.`;

    const cases: [string, Record<string, string>, string][] = [
      ['no Authorization header', {}, 'missing_credential'],
      ['a Basic header', { authorization: 'Basic YTpi' }, 'malformed_credential'],
      ['an API key', bearer(all().apiKey), 'malformed_credential'],
      ['a non-JWT', bearerToken('abc.def'), 'malformed_credential'],
      ['a tampered payload', bearerToken(tampered), 'invalid_token'],
      ['a wrong signature', bearerToken(`${h}.${p}.${s!.slice(0, -6)}AAAAAA`), 'invalid_token'],
      ['an unsecured (alg none) token', bearerToken(unsecured), 'invalid_token'],
      [
        'a token signed by a foreign key',
        bearerToken(await mintToken(suite.pool, clientId, { key: foreignKey })),
        'invalid_token',
      ],
      [
        'an unknown kid',
        bearerToken(await mintToken(suite.pool, clientId, { header: { kid: 'unknown' } })),
        'invalid_token',
      ],
      [
        'a wrong audience',
        bearerToken(await mintToken(suite.pool, clientId, { claims: { aud: 'other-api' } })),
        'invalid_token',
      ],
      [
        'a wrong issuer',
        bearerToken(await mintToken(suite.pool, clientId, { claims: { iss: 'https://evil' } })),
        'invalid_token',
      ],
      [
        'typ JWT instead of at+jwt',
        bearerToken(await mintToken(suite.pool, clientId, { header: { typ: 'JWT' } })),
        'invalid_token',
      ],
      [
        'no client_id claim',
        bearerToken(await mintToken(suite.pool, clientId, { claims: { client_id: undefined } })),
        'invalid_token',
      ],
      [
        'an unknown client',
        bearerToken(await mintToken(suite.pool, '5d7ab0b5-0000-4000-8000-000000000000')),
        'invalid_token',
      ],
      [
        'an expired token',
        bearerToken(await mintToken(suite.pool, clientId, { issuedAt: now - 900, expiresAt: now - 60 })),
        'expired_token',
      ],
    ];
    for (const [name, headers, code] of cases) {
      const res = await suite.api.get(probePath, { headers });
      expect(res.status, name).toBe(401);
      expect(res.body.error.code, name).toBe(code);
      expect(res.body.error.correlationId).toBe(res.headers.get('x-correlation-id'));
      expect(res.headers.get('www-authenticate'), name).toMatch(/^Bearer realm="connect"/);
    }
    // Within the clock tolerance (5 s) a just-expired token still passes.
    const justExpired = await mintToken(suite.pool, clientId, { issuedAt: now - 600, expiresAt: now - 1 });
    expect((await read(justExpired)).status).toBe(404);
  });

  it('answers 403 insufficient_scope to a valid token without the scope', async () => {
    const readOnly = await accessToken(suite.api, all(), 'appointments.read');
    const res = await suite.api.post('/connect/v1/appointment-requests', {
      headers: bearerToken(readOnly),
      body: { externalReference: 'x' },
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({
      code: 'insufficient_scope',
      details: { requiredScope: 'appointments.write' },
    });
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    const writeOnly = await accessToken(suite.api, suite.demo.clients['appointments.write']!);
    expect((await read(writeOnly)).status).toBe(403);
  });

  it('does not take an access token where an API key is required', async () => {
    const token = await accessToken(suite.api, all());
    const res = await suite.api.get('/api/v1/connect/inventory/items', { headers: bearerToken(token) });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('malformed_credential');
  });

  it('rate-limits /connect/v1 per Integration Client', async () => {
    const c = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    await setRateLimit(suite.pool, c.clientId, 2);
    const token = await accessToken(suite.api, c);
    expect((await read(token)).status).toBe(404);
    expect((await read(token)).status).toBe(404);
    const limited = await read(token);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('signing keys', () => {
  it('are shared by gateway replicas through PostgreSQL', async () => {
    const second = await startTestGateway(testConfig(suite.db.url, withKey));
    otherGateways.push(second);
    const api2 = await createApiClient(second.url);
    const token = await accessToken(suite.api, all());
    const token2 = await accessToken(api2, all());
    expect(decodeProtectedHeader(token2).kid).toBe(decodeProtectedHeader(token).kid);
    expect((await api2.get(probePath, { headers: bearerToken(token) })).status).toBe(404);
    expect((await read(token2)).status).toBe(404);
    const { rows } = await suite.pool.query('SELECT count(*)::int AS n FROM oauth_signing_keys');
    expect(rows[0].n).toBe(1);
  });

  it('come from OAUTH_SIGNING_KEY when set; every stored public key stays in the JWKS', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = (privateKey.export({ format: 'pem', type: 'pkcs8' }) as string).replace(/\n/g, '\\n');
    const envGateway = await startTestGateway(testConfig(suite.db.url, { OAUTH_SIGNING_KEY: pem }));
    otherGateways.push(envGateway);
    const api2 = await createApiClient(envGateway.url);
    const token = await accessToken(api2, all());
    const header = decodeProtectedHeader(token);
    expect(header.alg).toBe('EdDSA');
    const jwks = await api2.get(jwksPath);
    expect(jwks.body.keys).toHaveLength(2);
    expect(jwks.body.keys.find((k: { kid: string }) => k.kid === header.kid)).toMatchObject({
      kty: 'OKP',
      alg: 'EdDSA',
    });
    const { rows } = await suite.pool.query('SELECT private_pkcs8 FROM oauth_signing_keys WHERE kid = $1', [
      header.kid,
    ]);
    expect(rows[0].private_pkcs8).toBeNull(); // the env key's private half is never stored
    // The first replica learns the new key from PostgreSQL when it meets its kid.
    await eventually(async () => ((await read(token)).status === 404 ? true : undefined), 15_000, 'key refresh');
  });

  it('refuses a malformed OAUTH_SIGNING_KEY at start, without echoing it', async () => {
    const error = await startTestGateway(testConfig(suite.db.url, { OAUTH_SIGNING_KEY: 'secret-not-pem' })).catch(
      (err: Error) => err,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/OAUTH_SIGNING_KEY: must be a PKCS#8 PEM private key/);
    expect((error as Error).message).not.toContain('secret-not-pem');
  });
});

describe('the OpenAPI document', () => {
  it('stays valid and documents the token flow, the JWKS and the security of each /connect/v1 operation', async () => {
    const doc = structuredClone(suite.api.doc) as any;
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(doc.components.securitySchemes.oauth2).toMatchObject({
      type: 'oauth2',
      flows: {
        clientCredentials: {
          tokenUrl: tokenPath,
          scopes: { 'appointments.read': expect.any(String), 'appointments.write': expect.any(String) },
        },
      },
    });
    const ops = Object.entries<any>(doc.paths).filter(([p]) => p.startsWith('/connect/v1/appointment-requests'));
    expect(ops.length).toBe(4);
    for (const [path, methods] of ops) {
      for (const [method, op] of Object.entries<any>(methods)) {
        expect(op.security, `${method} ${path}`).toEqual([
          { oauth2: [routeScopes[`${method.toUpperCase()} ${path}`]] },
        ]);
        for (const status of ['401', '403', '404', '429', '500']) {
          if (status === '404' && path === '/connect/v1/appointment-requests') continue;
          expect(op.responses[status], `${status} ${method} ${path}`).toBeDefined();
        }
        expect(op.responses['401'].content['application/json'].schema.$ref).toBe(
          '#/components/schemas/ApiErrorResponse',
        );
      }
    }
    const token = doc.paths[tokenPath].post;
    expect(token.security).toEqual([]);
    expect(Object.keys(token.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
    expect(token.responses['400'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/OAuthErrorResponse',
    );
    expect(token.responses['401'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/OAuthErrorResponse',
    );
    expect(doc.paths[jwksPath].get.security).toEqual([]);
    for (const code of ['invalid_token', 'expired_token', 'invalid_state_transition', 'already_cancelled']) {
      expect(doc.components.schemas.ErrorCode.enum).toContain(code);
    }
  });
});
