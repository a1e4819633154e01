import { describe, expect, it } from 'vitest';
import { dueForRenewal } from '../../src/workers/webhooks/lease.js';

// Which leases the keeper renews at a tick (issue 50): only those set half a lease ago or more,
// so an attempt recorded within its timeout never has its lease rewritten.

describe('webhook lease renewal', () => {
  it('renews a lease only once half of it has run since it was set', () => {
    const held = new Map([
      ['1', { token: 'a', setAt: 0 }],
      ['2', { token: 'b', setAt: 5_000 }],
    ]);
    expect(dueForRenewal(held, 7_499, 15_000)).toEqual([]);
    expect(dueForRenewal(held, 7_500, 15_000)).toEqual([['1', { token: 'a', setAt: 0 }]]);
    expect(dueForRenewal(held, 12_500, 15_000).map(([id]) => id)).toEqual(['1', '2']);
  });
});
