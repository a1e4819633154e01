import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demo } from '../../src/admin/commands/demo.js';
import { createApiClient, type ApiClient } from '../support/api-client.js';
import { admin, bearer, createClientWithKey, setUploadQuota, type Demo } from '../support/fixtures.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Issue 24, finding 8: upload quotas hold across gateway replicas. Two gateways on one database
// stand for two replicas behind a load balancer. Quotas of 1 KiB/s with batches up to 96 KiB:
// one window of 96 KiB for 96 s, so two batches of about 40 KiB fit a window, a third does not.
// Leases (leased-counter.ts) are a twentieth of the window, smaller than a batch: a client is
// never admitted beyond its quota, and refused early by at most one lease per other replica,
// which here still leaves room for exactly two batches.
const windowBytes = 96 * 1024;
const suite = useGatewaySuite({
  env: () => ({
    UPLOAD_BYTES_PER_SECOND: String(1024 * 1024),
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: '1024',
    INBOUND_BATCH_MAX_BYTES: String(windowBytes),
    BODY_LIMIT_BYTES: String(16 * 1024),
  }),
});

let second: TestGateway;
let apis: ApiClient[];

beforeAll(async () => {
  second = await startTestGateway(suite.config);
  apis = [suite.api, await createApiClient(second.url)];
});

afterAll(async () => {
  await second?.stop();
});

const body = (tag: string) => ({ sourceSystem: 'replicas', targets: makeTargets(110, tag) });
const post = (replica: number, apiKey: string, tag: string) =>
  apis[replica]!.post('/api/v1/inbound/targets/batch', { headers: bearer(apiKey), body: body(tag) });

/** Posts six batches one after another, alternating replicas; the statuses and refusals' quota. */
async function alternate(keys: string[]) {
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(await post(i % 2, keys[i % keys.length]!, `b${i}`));
  return {
    accepted: answers.filter((r) => r.status === 200).length,
    refused: answers.filter((r) => r.status === 429).map((r) => (r.body as any).error.details.quota),
    others: answers.filter((r) => r.status !== 200 && r.status !== 429).map((r) => r.status),
  };
}

const newTenant = async (name: string) => (await admin(suite.pool, demo, ['--name', name])) as Demo;

describe('upload quotas across replicas', () => {
  it('holds one client alternating between two replicas to one quota, not two', async () => {
    const size = JSON.stringify(body('b0')).length;
    expect(size * 2).toBeLessThan(windowBytes - windowBytes / 20);
    expect(size * 3).toBeGreaterThan(windowBytes);
    const tenant = await newTenant('client quota tenant');
    const client = await createClientWithKey(suite.pool, tenant.tenantId, 'all');
    await setUploadQuota(suite.pool, client.clientId, 1024);
    // Its client quota (checked first) is as small as the tenant's: it is the one that refuses.
    expect(await alternate([client.apiKey])).toEqual({
      accepted: 2,
      refused: ['client', 'client', 'client', 'client'],
      others: [],
    });
  });

  it('holds two clients of one tenant, each on its own replica, to one tenant quota', async () => {
    const tenant = await newTenant('tenant quota tenant');
    const first = tenant.clients.all!.apiKey;
    const other = (await createClientWithKey(suite.pool, tenant.tenantId, 'all')).apiKey;
    // Each client only ever talks to one replica (first to A, other to B).
    expect(await alternate([first, other])).toEqual({
      accepted: 2,
      refused: ['tenant', 'tenant', 'tenant', 'tenant'],
      others: [],
    });
    // Another tenant is not held by it.
    const elsewhere = await newTenant('another tenant');
    expect((await post(1, elsewhere.clients.all!.apiKey, 'x')).status).toBe(200);
  });
});
