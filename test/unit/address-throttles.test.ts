import { describe, expect, it } from 'vitest';
import { addressKey } from '../../src/gateway/auth/address-key.js';
import { createFailedAuthLimiter } from '../../src/gateway/auth/failed-auth-limiter.js';
import { createKnownKeys } from '../../src/gateway/auth/known-keys.js';
import { hashApiKey } from '../../src/shared/api-keys.js';
import type { Pool } from '../../src/shared/db/pool.js';
import { AppError } from '../../src/shared/errors.js';

describe('addressKey', () => {
  it('counts IPv4 as is (mapped or not) and IPv6 by its /64', () => {
    expect(addressKey('::ffff:203.0.113.7')).toBe(addressKey('203.0.113.7'));
    expect(addressKey('203.0.113.7')).not.toBe(addressKey('203.0.113.8'));
    expect(addressKey('2001:db8:1:2::1')).toBe(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
  });
});

describe('the failed-credential limiter', () => {
  const invalid = () => new AppError('invalid_credential', 'no');
  it('shares one counter between addresses of one IPv6 /64 and counts only refused credentials', async () => {
    const limiter = createFailedAuthLimiter(2);
    const missing = new AppError('missing_credential', 'none');
    expect(await limiter.refusal('2001:db8:1:2::1', missing)).toBe(missing); // not counted
    expect(await limiter.refusal('2001:db8:1:2::1', invalid())).toMatchObject({ code: 'invalid_credential' });
    expect(await limiter.refusal('2001:db8:1:2::2', invalid())).toMatchObject({ code: 'invalid_credential' });
    expect(await limiter.refusal('2001:db8:1:2:abcd::9', invalid())).toMatchObject({
      code: 'rate_limited',
      retryAfterSeconds: expect.any(Number),
    });
    expect(await limiter.refusal('2001:db8:1:3::1', invalid())).toMatchObject({ code: 'invalid_credential' });
  });
});

describe('known keys', () => {
  function stubPool(hashes: Buffer[]) {
    const calls: unknown[][] = [];
    const pool = {
      query: async (_sql: string, params: unknown[]) => {
        calls.push(params);
        await new Promise((r) => setTimeout(r, 5));
        return { rows: [{ at: new Date(), hashes: [...hashes] }] };
      },
    } as unknown as Pool;
    return { pool, calls };
  }

  it('answers a flood of unknown keys with one refresh query, and finds a key created since', async () => {
    const stored = [hashApiKey('a')];
    const { pool, calls } = stubPool(stored);
    const known = createKnownKeys(pool);
    const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => known.has(hashApiKey(`bogus-${i}`))));
    expect(flood.every((found) => !found)).toBe(true);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toEqual([null]); // the first refresh reads every key
    expect(await known.has(hashApiKey('a'))).toBe(true);
    expect(calls).toHaveLength(1); // a known key costs no query
    stored.push(hashApiKey('b'));
    expect(await known.has(hashApiKey('b'))).toBe(true); // the next refresh reads keys created since
    expect(calls).toHaveLength(2);
    expect(calls[1]![0]).toBeInstanceOf(Date);
  });

  it('answers 503 when the store is unreachable', async () => {
    const pool = { query: async () => Promise.reject(new Error('down')) } as unknown as Pool;
    await expect(createKnownKeys(pool).has(hashApiKey('x'))).rejects.toMatchObject({ code: 'service_unavailable' });
  });
});
