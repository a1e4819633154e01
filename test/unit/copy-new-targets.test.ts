import { describe, expect, it } from 'vitest';
import { CopyFirstPolicy } from '../../src/workers/inbound/copy-first.js';
import { withOwnerColumns } from '../../src/workers/inbound/owner-columns.js';

// The pieces of COPY straight into targets (apply-chunk.ts) that need no database;
// test/integration/chunk-rows-apply.test.ts proves what PostgreSQL stores from them.

describe('withOwnerColumns', () => {
  const tenant = '7d0f1c52-5b8e-4d43-9d39-6a2f6c1b8e01';

  it('puts tenant, source system and import job in front of every row', () => {
    const rows = Buffer.from('0\ta\tSite ä\n1\tb\tOther 🏠\n');
    expect(withOwnerColumns(rows, { tenantId: tenant, sourceSystem: 'erp', importJobId: '42' }).toString()).toBe(
      `${tenant}\terp\t42\t0\ta\tSite ä\n${tenant}\terp\t42\t1\tb\tOther 🏠\n`,
    );
  });

  it('escapes the source system as COPY text, and prefixes a last row without its newline', () => {
    const rows = Buffer.from('0\ta\tx\\ty\n1\tb\tz');
    expect(withOwnerColumns(rows, { tenantId: tenant, sourceSystem: 'tab\there\\', importJobId: '7' }).toString()).toBe(
      `${tenant}\ttab\\there\\\\\t7\t0\ta\tx\\ty\n${tenant}\ttab\\there\\\\\t7\t1\tb\tz`,
    );
  });

  it('leaves no rows as none', () => {
    expect(withOwnerColumns(Buffer.alloc(0), { tenantId: tenant, sourceSystem: 'erp', importJobId: '1' })).toHaveLength(
      0,
    );
  });
});

describe('CopyFirstPolicy', () => {
  it('tries COPY first until a miss, then skips it for the next chunks of that source only', () => {
    const policy = new CopyFirstPolicy(3);
    expect(policy.shouldTry('t1', 'erp')).toBe(true);
    policy.missed('t1', 'erp');
    expect([1, 2, 3].map(() => policy.shouldTry('t1', 'erp'))).toEqual([false, false, false]);
    expect(policy.shouldTry('t1', 'erp')).toBe(true);
    expect(policy.shouldTry('t1', 'crm')).toBe(true);
    expect(policy.shouldTry('t2', 'erp')).toBe(true);
  });

  it('a miss while skipping starts the count again', () => {
    const policy = new CopyFirstPolicy(2);
    policy.missed('t', 's');
    expect(policy.shouldTry('t', 's')).toBe(false);
    policy.missed('t', 's');
    expect([policy.shouldTry('t', 's'), policy.shouldTry('t', 's'), policy.shouldTry('t', 's')]).toEqual([
      false,
      false,
      true,
    ]);
  });

  it('forgets the source missed longest ago once it holds its maximum', () => {
    const policy = new CopyFirstPolicy(5, 2);
    policy.missed('t', 'a');
    policy.missed('t', 'b');
    policy.missed('t', 'a'); // a is now the newer
    policy.missed('t', 'c'); // forgets b
    expect(['a', 'b', 'c'].map((s) => policy.shouldTry('t', s))).toEqual([false, true, false]);
  });

  it('keeps sources whose names run together apart', () => {
    const policy = new CopyFirstPolicy(1);
    policy.missed('t', 'ab');
    expect(policy.shouldTry('ta', 'b')).toBe(true);
  });
});
