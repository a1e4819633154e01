import { describe, expect, it } from 'vitest';
import { DispatcherSlots } from '../../src/workers/webhooks/dispatcher-slots.js';

// The dispatcher's slots (issue 50): the reserve for endpoints that answer, each tenant's slot
// time, and which endpoints count as slow. A fake clock: nothing here waits.

function slots(settings: Partial<ConstructorParameters<typeof DispatcherSlots>[0]> = {}) {
  let now = 0;
  const s = new DispatcherSlots(
    { max: 8, tenantSharePercent: 50, reservePercent: 25, slowMs: 1000, halfLifeMs: 10_000, ...settings },
    () => now,
  );
  /** Takes a slot; finish() ends its work. */
  const take = (id: string, tenant: string, endpoint = `ep-${id}`, answering = true) => {
    let finish!: () => void;
    const done = s.take(
      { id, tenant_id: tenant, endpoint_id: endpoint, answering },
      () => new Promise<void>((r) => (finish = r)),
    );
    return { finish: async () => (finish(), await done) };
  };
  return { s, take, advance: (ms: number) => (now += ms) };
}

describe('dispatcher slots', () => {
  it('keeps the reserve out of what endpoints not known to answer may take', async () => {
    const { s, take } = slots();
    expect(s.reserve).toBe(2);
    expect(s.unreservedFree()).toBe(6);
    const held = ['1', '2', '3', '4', '5', '6'].map((id) => take(id, `t${id}`));
    expect(s.free()).toBe(2);
    expect(s.unreservedFree()).toBe(0);
    await held[0]!.finish();
    expect(s.unreservedFree()).toBe(1);
    expect(s.peakHeld()).toBe(6);
  });

  it("counts a tenant's slot time, open requests as they go, decaying by half every half-life", async () => {
    const { s, take, advance } = slots();
    const a = take('1', 'A');
    take('2', 'B');
    advance(1000);
    const use = () => {
      const u = s.tenantUse();
      return Object.fromEntries(u.ids.map((id, i) => [id, { held: u.held[i], usedMs: u.usedMs[i] }]));
    };
    expect(use()).toEqual({ A: { held: 1, usedMs: 1000 }, B: { held: 1, usedMs: 1000 } });
    await a.finish();
    advance(10_000); // one half-life: A's 1,000 ms count 500; B's request is still open
    expect(use()).toEqual({ A: { held: 0, usedMs: 500 }, B: { held: 1, usedMs: 11_000 } });
    expect(s.heldByTenant()).toEqual(new Map([['B', 1]]));
  });

  it('treats an endpoint as slow while a request of it is open past slowMs, and after a slow attempt, until a fast one', async () => {
    const { s, take, advance } = slots();
    const first = take('1', 'A', 'E');
    advance(999);
    expect(s.slowEndpointIds()).toEqual([]);
    advance(1);
    expect(s.slowEndpointIds()).toEqual(['E']);
    await first.finish(); // it took 1,000 ms: still slow
    expect(s.slowEndpointIds()).toEqual(['E']);
    const second = take('2', 'A', 'E');
    advance(5);
    await second.finish(); // answered fast
    expect(s.slowEndpointIds()).toEqual([]);
  });

  it('lists as slow only what PostgreSQL counts as answering: not an open request claimed as not answering, not a slow failure', async () => {
    const { s, take, advance } = slots();
    const noisy = take('1', 'A', 'N', false);
    const failing = take('2', 'A', 'F');
    advance(1000);
    expect(s.slowEndpointIds()).toEqual(['F']);
    expect(s.isSlow('N')).toBe(true); // not chained after a success, all the same
    s.markFailed('2');
    await failing.finish();
    expect(s.slowEndpointIds()).toEqual([]);
    expect(s.isSlow('F')).toBe(false);
    await noisy.finish(); // a slow success: PostgreSQL counts N as answering now, this list must not
    expect(s.slowEndpointIds()).toEqual(['N']);
    // an answering-lane process leaves out only endpoints with a slow request open (no other lane takes N)
    expect(s.slowEndpointIds({ openOnly: true })).toEqual([]);
    const open = take('3', 'A', 'N', true);
    advance(1000);
    expect(s.slowEndpointIds({ openOnly: true })).toEqual(['N']);
    await open.finish();
  });

  it('counts an endpoint slow while any of its requests here is open slowMs or more', async () => {
    const { s, take, advance } = slots();
    const old = take('1', 'A', 'E');
    advance(1000);
    const fresh = take('2', 'A', 'E');
    expect(s.isSlow('E')).toBe(true);
    expect(s.isSlow('other')).toBe(false);
    s.markFailed('1');
    await old.finish(); // a failure: forgets nothing slow of its own, and the fresh one is not slow yet
    expect(s.isSlow('E')).toBe(false);
    advance(1000);
    expect(s.isSlow('E')).toBe(true);
    s.markFailed('2');
    await fresh.finish();
    expect(s.isSlow('E')).toBe(false);
  });

  it('names the deliveries in hand for at least a given time', () => {
    const { s, take, advance } = slots();
    take('1', 'A');
    advance(500);
    take('2', 'A');
    expect(s.deliveryIds()).toEqual(['1', '2']);
    expect(s.deliveryIds(500)).toEqual(['1']);
    expect(s.deliveryIds(501)).toEqual([]);
  });

  it("keeps a slot held across a chain (the endpoint's next delivery, begun by the recording), charging each attempt", async () => {
    let now = 0;
    const s = new DispatcherSlots(
      { max: 2, tenantSharePercent: 100, reservePercent: 0, slowMs: 1000, halfLifeMs: 1e12 },
      () => now,
    );
    type D = { id: string; tenant_id: string; endpoint_id: string };
    const finishers = new Map<string, (next: D | null) => void>();
    const seen: { free: number; ids: string[] }[] = [];
    const done = s.take<D>({ id: '1', tenant_id: 'A', endpoint_id: 'E' }, (d) => {
      seen.push({ free: s.free(), ids: s.deliveryIds() });
      return new Promise<D | null>((r) => finishers.set(d.id, r));
    });
    let settled = false;
    void done.then(() => (settled = true));
    const finish = async (id: string, next: D | null) => {
      now += 100;
      finishers.get(id)!(next);
      await new Promise((r) => setImmediate(r));
    };
    await finish('1', { id: '2', tenant_id: 'A', endpoint_id: 'E' });
    await finish('2', { id: '3', tenant_id: 'A', endpoint_id: 'E' });
    expect(seen).toEqual([
      { free: 1, ids: ['1'] },
      { free: 1, ids: ['2'] }, // each next starts as the one before ends: never a free moment
      { free: 1, ids: ['3'] },
    ]);
    expect(s.deliveryIds()).toEqual(['3']);
    expect(s.heldByTenant()).toEqual(new Map([['A', 1]]));
    expect(settled).toBe(false);
    await finish('3', null);
    expect(settled).toBe(true);
    expect(s.free()).toBe(2);
    expect(s.peakHeld()).toBe(1);
    const use = s.tenantUse();
    expect(use.usedMs[0]).toBeCloseTo(300, 3); // three attempts of 100 ms each
    expect(use.costMs[0]).toBeCloseTo(100, 3);
  });
});
