// Issue 24, finding 7: failed credentials from one address must not lock out valid ones from it
// (behind a load balancer every client shares its address), counters go by IPv4 address or IPv6
// /64, and the forwarded client address is used only when TRUSTED_PROXIES says so.
import { generateApiKey } from '../../src/shared/api-keys.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '../support/api-client.js';
import { bearer, createClientWithKey } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
import { useGatewaySuite } from '../support/suite.js';
import { form, formHeaders, requestToken, testKeyEncryptionKey, tokenPath } from './oauth-helpers.js';

const limit = 5;
const env = {
  OAUTH_KEY_ENCRYPTION_KEY: testKeyEncryptionKey,
  AUTH_FAILURES_PER_MINUTE: String(limit),
  OAUTH_TOKEN_ADDRESS_LIMIT_PER_MINUTE: String(limit),
};
const suite = useGatewaySuite({ env: () => env });
const itemsPath = '/api/v1/connect/inventory/items';

const bogusKey = (api: ApiClient, headers: Record<string, string> = {}) =>
  api.get(itemsPath, { headers: { ...bearer(generateApiKey().key), ...headers } });
const bogusSecret = (api: ApiClient, clientId: string) =>
  api.post(tokenPath, {
    headers: formHeaders,
    rawBody: form({ grant_type: 'client_credentials', client_id: clientId, client_secret: generateApiKey().key }),
  });

describe('failed API keys from one address', () => {
  it("refuse that address's bogus keys with 429 but never a valid key, even one not seen before", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= limit; i++) statuses.push((await bogusKey(suite.api)).status);
    expect(statuses).toEqual([...Array(limit).fill(401), 429]);
    // Tenant B's client, first request ever, from the same address.
    const b = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.inventory.read');
    const res = await suite.api.get(itemsPath, { headers: bearer(b.apiKey) });
    expect(res.status).toBe(200);
    expect((await suite.api.get(itemsPath, { headers: bearer(suite.demo.clients.all!.apiKey) })).status).toBe(200);
    expect((await bogusKey(suite.api)).status).toBe(429); // bogus keys are still refused
  });
});

describe('failed client secrets from one address', () => {
  it('refuse bogus secrets with 429 slow_down but never a valid secret', async () => {
    const victim = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    const statuses: number[] = [];
    for (let i = 0; i <= limit; i++) statuses.push((await bogusSecret(suite.api, victim.clientId)).status);
    expect(statuses).toEqual([...Array(limit).fill(401), 429]);
    const res = await requestToken(suite.api, victim);
    expect(res.status).toBe(200);
    const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.read');
    expect((await requestToken(suite.api, other)).status).toBe(200);
    const again = await bogusSecret(suite.api, victim.clientId);
    expect(again.status).toBe(429);
    expect(again.body.error).toBe('slow_down');
  });
});

describe('the client address behind a load balancer', () => {
  let proxied: TestGateway;
  let api: ApiClient;
  beforeAll(async () => {
    proxied = await startTestGateway(testConfig(suite.db.url, { ...env, TRUSTED_PROXIES: '1' }));
    api = await createApiClient(proxied.url);
  });
  afterAll(async () => {
    await proxied?.stop();
  });

  it('with TRUSTED_PROXIES=1 counts by the right-most X-Forwarded-For address', async () => {
    // The client itself wrote the first entry; the trusted proxy appended the address it saw.
    const from = (address: string) => ({ 'x-forwarded-for': `192.0.2.99, ${address}` });
    for (let i = 0; i < limit; i++) expect((await bogusKey(api, from('198.51.100.1'))).status).toBe(401);
    expect((await bogusKey(api, from('198.51.100.1'))).status).toBe(429);
    expect((await bogusKey(api, from('198.51.100.2'))).status).toBe(401); // another client of the proxy
    expect((await bogusKey(api, { 'x-forwarded-for': '198.51.100.1, 198.51.100.3' })).status).toBe(401);
  });

  it('counts an IPv6 client by its /64', async () => {
    for (let i = 0; i < limit; i++) {
      expect((await bogusKey(api, { 'x-forwarded-for': `2001:db8:7:7::${i + 1}` })).status).toBe(401);
    }
    expect((await bogusKey(api, { 'x-forwarded-for': '2001:db8:7:7:ffff::1' })).status).toBe(429);
    expect((await bogusKey(api, { 'x-forwarded-for': '2001:db8:7:8::1' })).status).toBe(401);
  });

  it('without the setting ignores X-Forwarded-For', async () => {
    const own = await startTestGateway(testConfig(suite.db.url, env));
    try {
      const direct = await createApiClient(own.url);
      for (let i = 0; i < limit; i++) {
        expect((await bogusKey(direct, { 'x-forwarded-for': `198.51.100.${i + 10}` })).status).toBe(401);
      }
      expect((await bogusKey(direct, { 'x-forwarded-for': '198.51.100.50' })).status).toBe(429);
    } finally {
      await own.stop();
    }
  });
});
