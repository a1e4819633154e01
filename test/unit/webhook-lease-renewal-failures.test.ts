import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { LeaseKeeper } from '../../src/workers/webhooks/lease.js';
import { eventually } from '../support/kafka.js';

// A renewal of the leases a dispatcher holds that fails is told to the dispatchers' metrics
// (webhook_lease_renewals_failed_total) and tried again at the next tick. Here PostgreSQL is a
// port nobody listens on: every renewal fails.

const unreachable = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none' });
afterAll(() => unreachable.end());

describe('webhook lease renewals', () => {
  it('counts each renewal that failed, for every dispatcher told, until told to stop', async () => {
    const keeper = new LeaseKeeper(unreachable, 300, createLogger('silent', 'test-leases'));
    let a = 0;
    let b = 0;
    keeper.onRenewalFailed(() => a++);
    const stopB = keeper.onRenewalFailed(() => b++);
    keeper.hold('1', '00000000-0000-4000-8000-000000000001');
    try {
      await eventually(() => (a >= 2 ? true : undefined), 30_000, 'two failed renewals');
      stopB();
      const bAtStop = b;
      const aAtStop = a;
      await eventually(() => (a > aAtStop ? true : undefined), 30_000, 'another failed renewal');
      expect(b).toBe(bAtStop);
      expect(bAtStop).toBeGreaterThanOrEqual(1);
    } finally {
      keeper.release('1');
    }
  });
});
