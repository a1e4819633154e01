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
    const slots = new InFlightSlots(50, 50);
    expect(takeAll(slots, { client: 'a', tenant: 't' }, 16)).toBe(8);
    expect(takeAll(slots, { client: 'b', tenant: 't' }, 16)).toBe(0); // the tenant's 8 are held
    expect(takeAll(slots, { client: 'c', tenant: 'u' }, 16)).toBe(8);
  });

  it("lets a client allowed more than its tenant's share use it (the tenant's share is never below a client's)", () => {
    const slots = new InFlightSlots(100, 50);
    expect(takeAll(slots, { client: 'a', tenant: 't' }, 16)).toBe(16);
  });
});
