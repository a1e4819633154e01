import { describe, expect, it } from 'vitest';
import { InFlightSlots } from '../../src/gateway/http/in-flight.js';

// In-flight slots per client and per tenant (the e2e side: noisy-neighbour and
// route-suggestion-tenant-share).

const takeAll = (slots: InFlightSlots, who: { client: string; tenant: string }, max: number) => {
  let n = 0;
  while (slots.take('g', who, max)) n++;
  return n;
};

describe('in-flight slots', () => {
  it("holds a tenant's clients together to the tenant's share, each to its own", () => {
    const slots = new InFlightSlots({ client: { percent: 50 }, tenant: { percent: 50 } });
    expect(takeAll(slots, { client: 'a', tenant: 't' }, 16)).toBe(8);
    expect(takeAll(slots, { client: 'b', tenant: 't' }, 16)).toBe(0); // the tenant's 8 are held
    expect(takeAll(slots, { client: 'c', tenant: 'u' }, 16)).toBe(8);
  });

  it("lets a client allowed more than its tenant's share use it (the tenant's share is never below a client's)", () => {
    const slots = new InFlightSlots({ client: { percent: 100 }, tenant: { percent: 50 } });
    expect(takeAll(slots, { client: 'a', tenant: 't' }, 16)).toBe(16);
  });
});

describe('in-flight slots with shares as counts (the event feed)', () => {
  it('holds a client to its count, a tenant to its count and everyone to max', () => {
    const slots = new InFlightSlots({ client: { count: 2 }, tenant: { count: 3 } });
    expect(takeAll(slots, { client: 'a', tenant: 't' }, 5)).toBe(2);
    expect(takeAll(slots, { client: 'b', tenant: 't' }, 5)).toBe(1); // the tenant's third
    expect(takeAll(slots, { client: 'c', tenant: 'u' }, 5)).toBe(2);
    expect(takeAll(slots, { client: 'd', tenant: 'v' }, 5)).toBe(0); // all five held
  });

  it('gives a slot back once released, once', () => {
    const slots = new InFlightSlots({ client: { count: 1 }, tenant: { count: 1 } });
    const release = slots.take('g', { client: 'a', tenant: 't' }, 1);
    expect(release).toBeTypeOf('function');
    expect(slots.take('g', { client: 'b', tenant: 'u' }, 1)).toBe(false);
    (release as () => void)();
    (release as () => void)();
    expect(slots.take('g', { client: 'b', tenant: 'u' }, 1)).toBeTypeOf('function');
    expect(slots.take('g', { client: 'c', tenant: 'w' }, 1)).toBe(false);
  });
});
