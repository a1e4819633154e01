import { describe, expect, it } from 'vitest';
import { demo } from '../../src/admin/commands/demo.js';
import { admin, bearer, createClientWithKey, type Demo } from '../support/fixtures.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Issue 24, finding 8: the upload quota holds a tenant's clients together, not only each client.
// A tenant quota of 1 KiB/s with batches up to 96 KiB: one tenant window of 96 KiB for 96 s.
const suite = useGatewaySuite({
  env: () => ({
    UPLOAD_BYTES_PER_SECOND: String(48 * 1024),
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: '1024',
    INBOUND_BATCH_MAX_BYTES: String(96 * 1024),
    BODY_LIMIT_BYTES: String(16 * 1024),
  }),
});

const post = (apiKey: string, tag: string) =>
  suite.api.post('/api/v1/inbound/targets/batch', {
    headers: bearer(apiKey),
    body: { sourceSystem: 'tenant-quota', targets: makeTargets(180, tag) }, // about 66 KiB
  });

describe('the tenant upload quota', () => {
  it('is shared by all of a tenant’s clients, and holds no other tenant', async () => {
    const first = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    const second = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    expect((await post(first.apiKey, 'a')).status).toBe(200);
    // The second client's own window is untouched, but the tenant's has 30 KiB left.
    const refused = await post(second.apiKey, 'b');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      error: { code: 'upload_quota_exceeded', details: { quota: 'tenant', bytesPerSecond: 1024 } },
    });
    const other = (await admin(suite.pool, demo, ['--name', 'other tenant'])) as Demo;
    expect((await post(other.clients.all!.apiKey, 'c')).status).toBe(200);
  });
});
