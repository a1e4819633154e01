import { afterEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/shared/errors.js';
import { TenantShares } from '../../src/shared/db/tenant-shares.js';

// The fair queue in front of the gateway's scoped pools (the e2e side: fair-reads; with a real
// PostgreSQL: integration/tenant-shares).

const shares = (max: number, sharePercent = 50, queuePerTenant = 10, waitMs = 5000) =>
  new TenantShares({ max, sharePercent, queuePerTenant, waitMs });

/** Starts a checkout and records when it is granted. */
function checkout(gate: TenantShares, tenant: string, granted: string[]) {
  const taken = gate.take(tenant).then((release) => {
    granted.push(tenant);
    return release;
  });
  taken.catch(() => undefined);
  return taken;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('tenant shares of a pool', () => {
  it("holds one tenant to its share and gives another a connection at once while the first one's queue waits", async () => {
    const gate = shares(4);
    expect(gate.share).toBe(2);
    const granted: string[] = [];
    const a = [1, 2, 3, 4, 5].map(() => checkout(gate, 'a', granted));
    await settle();
    expect(granted).toEqual(['a', 'a']);
    expect(gate.stats()).toMatchObject({ held: 2, waiting: 3, tenantsAtShare: 1 });
    await checkout(gate, 'b', granted);
    expect(granted).toEqual(['a', 'a', 'b']);
    (await a[0]!)();
    await settle();
    expect(granted).toEqual(['a', 'a', 'b', 'a']); // a's next, within its share again
    expect(gate.stats().outcomes).toMatchObject({ immediate: 3, queued: 1 });
  });

  it('hands a free connection to the waiting tenant that holds fewest, ties to the one waiting longest', async () => {
    const gate = shares(3, 100);
    const granted: string[] = [];
    const held = await Promise.all([
      checkout(gate, 'a', granted),
      checkout(gate, 'a', granted),
      checkout(gate, 'b', granted),
    ]);
    const waiting = [checkout(gate, 'a', granted), checkout(gate, 'b', granted), checkout(gate, 'c', granted)];
    await settle();
    expect(gate.stats().waiting).toBe(3);
    held[0]!(); // a holds 1, b 1, c 0: c first
    await settle();
    expect(granted.slice(3)).toEqual(['c']);
    held[1]!(); // a 0, b 1, c 1: a
    await settle();
    expect(granted.slice(3)).toEqual(['c', 'a']);
    held[2]!(); // b 0
    await settle();
    expect(granted.slice(3)).toEqual(['c', 'a', 'b']);
    for (const w of waiting) (await w)();
    expect(gate.stats()).toMatchObject({ held: 0, waiting: 0 });
  });

  it('refuses a tenant whose queue is full at once, and one whose wait runs out, with 429 database_share_exceeded', async () => {
    vi.useFakeTimers();
    const gate = shares(2, 50, 1, 5000);
    const release = await gate.take('a');
    const queued = gate.take('a');
    const full = await gate.take('a').catch((err: unknown) => err);
    expect(full).toBeInstanceOf(AppError);
    expect(full).toMatchObject({ code: 'database_share_exceeded', kind: 'rate_limited', retryAfterSeconds: 1 });
    expect((full as AppError).details).toMatchObject({ reason: 'queue_full', share: 1 });
    const expired = queued.catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(5000);
    expect((await expired) as AppError).toMatchObject({
      code: 'database_share_exceeded',
      details: { reason: 'wait_expired' },
    });
    expect(gate.stats()).toMatchObject({ held: 1, waiting: 0 });
    expect(gate.stats().outcomes).toMatchObject({ immediate: 1, queue_full: 1, wait_expired: 1 });
    release();
    release(); // a second release gives nothing back twice
    expect(gate.stats().held).toBe(0);
  });

  it('never lets more be held than the pool has, however many tenants ask', async () => {
    const gate = shares(5, 40);
    const granted: string[] = [];
    const all = Array.from({ length: 30 }, (_, i) => checkout(gate, `t${i % 10}`, granted));
    await settle();
    expect(gate.stats().held).toBe(5);
    let maxHeld = 0;
    for (const taken of all) {
      (await taken)();
      maxHeld = Math.max(maxHeld, gate.stats().held);
      await settle();
    }
    expect(maxHeld).toBeLessThanOrEqual(5);
    expect(granted).toHaveLength(30);
    expect(gate.stats()).toMatchObject({ held: 0, waiting: 0 });
  });
});
