import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Pool } from '../../shared/db/pool.js';
import { unavailable } from '../../shared/errors.js';

// Fixed windows of points per key, counted in PostgreSQL (table rate_limits) so every gateway
// replica shares them: the request rate limit (a request is a point) and the upload quotas (a
// body byte is a point). A replica does not write the shared counter on every take: it leases a
// block of the window's points at once and spends it locally, so most takes cost no database
// round trip.
//
// Error bound, per key and window: the shared counter holds exactly the points replicas have
// leased, so a key is never let past its limit across replicas. A replica holds at most one
// lease unspent (a twentieth of the limit, at least 1, at most leaseMax), so a key spread over
// R replicas may be refused up to (R − 1) leases short of its limit. While PostgreSQL is
// unreachable each replica counts in memory instead (the library's insurance limiter): the
// limit then holds per replica (up to R times the limit in all), and an outage is never
// turned into errors of its own.

/** `points` per fixed window of `seconds`. */
export type CounterWindow = { points: number; seconds: number };

/** A take's outcome: whether it was taken, what is left of the window as this replica knows it, and when it ends. */
export type Taken = { taken: boolean; remaining: number; msBeforeNext: number };

export type LeasedCounter = {
  /** Takes `points` of key's window, or none when they do not fit. */
  take(key: string, window: CounterWindow, points: number): Promise<Taken>;
  /** Returns points taken in the current window (a take undone). */
  giveBack(key: string, window: CounterWindow, points: number): Promise<void>;
};

/** Points of the current window this replica holds for a key, and the store's remainder when last asked. */
type Lease = { window: CounterWindow; left: number; storeLeft: number; endsAt: number };

/**
 * keyPrefix: the keys' namespace in the table. leaseMax: the most points one lease takes (1:
 * every take writes the shared counter). pool null: counted in memory only (one replica).
 */
export function createLeasedCounter(pool: Pool | null, keyPrefix: string, leaseMax = Infinity): LeasedCounter {
  // rate-limiter-flexible fixes points and duration per instance: one per window, all on the
  // same keys, so a changed limit applies to the running window.
  const stores = new Map<string, RateLimiterAbstract>();
  const storeFor = ({ points, seconds }: CounterWindow) => {
    const id = `${points}/${seconds}`;
    let store = stores.get(id);
    if (!store) {
      const memory = new RateLimiterMemory({ keyPrefix, points, duration: seconds });
      store = pool
        ? new RateLimiterPostgres({
            storeClient: pool,
            storeType: 'pool',
            tableName: 'rate_limits',
            tableCreated: true,
            keyPrefix,
            points,
            duration: seconds,
            insuranceLimiter: memory,
          })
        : memory;
      stores.set(id, store);
    }
    return store;
  };
  const leaseSize = (window: CounterWindow) => Math.max(1, Math.min(leaseMax, Math.floor(window.points / 20)));
  const leases = new Map<string, Lease>();
  const leasing = new Map<string, Promise<Taken>>();
  let leased = 0;

  const outcome = (taken: boolean, lease: Lease): Taken => ({
    taken,
    remaining: lease.left + lease.storeLeft,
    msBeforeNext: Math.max(0, lease.endsAt - Date.now()),
  });

  /** Asks the store for `want` points: those it had free (all, some or none), the rest given back. */
  async function ask(key: string, window: CounterWindow, want: number) {
    const store = storeFor(window);
    try {
      const res = await store.consume(key, want);
      return { granted: want, storeLeft: res.remainingPoints, endsAt: Date.now() + res.msBeforeNext };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw unavailable('The rate limiter store');
      // The counter went past the limit: what it held before this ask was still free.
      const granted = Math.max(0, Math.min(want, window.points - (err.consumedPoints - want)));
      return { granted, storeLeft: 0, endsAt: Date.now() + err.msBeforeNext, over: store };
    }
  }

  /** Undoes `points` of an ask in the store, so the counter holds only what replicas keep. */
  async function unask(store: RateLimiterAbstract, key: string, points: number, endsAt: number) {
    // Past the window's end the row belongs to the next window: nothing to undo.
    if (points <= 0 || endsAt <= Date.now()) return;
    // Not undone (the store failing in between): the points are lost to this window, never gained.
    await store.reward(key, points).catch(() => undefined);
  }

  /** A new lease for key: what lease (if current) holds, plus a block from the store covering `points`. */
  async function topUp(key: string, window: CounterWindow, points: number, lease: Lease | null): Promise<Taken> {
    const left = lease?.left ?? 0;
    const want = Math.max(leaseSize(window), points - left);
    const { granted, storeLeft, endsAt, over } = await ask(key, window, want);
    let next: Lease;
    if (left + granted >= points) {
      if (over) await unask(over, key, want - granted, endsAt);
      next = { window, left: left + granted - points, storeLeft, endsAt };
    } else {
      // Not enough: the points granted go back to the store, for takes that fit them.
      if (over) await unask(over, key, want, endsAt);
      next = { window, left, storeLeft: granted, endsAt };
    }
    leases.set(key, next);
    if (++leased % 1000 === 0) forgetEnded();
    return outcome(left + granted >= points, next);
  }

  function forgetEnded() {
    const now = Date.now();
    for (const [key, lease] of leases) if (lease.endsAt <= now) leases.delete(key);
  }

  const current = (key: string, window: CounterWindow) => {
    const lease = leases.get(key);
    const same = lease && lease.window.points === window.points && lease.window.seconds === window.seconds;
    return same && lease.endsAt > Date.now() ? lease : null;
  };

  return {
    async take(key, window, points) {
      for (;;) {
        const lease = current(key, window);
        if (lease && lease.left >= points) {
          lease.left -= points;
          return outcome(true, lease);
        }
        // What this replica holds and the store had free when last asked do not fit: refused
        // until the window ends, without asking the store again.
        if (lease && lease.left + lease.storeLeft < points) return outcome(false, lease);
        // One store request per key at a time; concurrent takes wait for it and try again.
        const pending = leasing.get(key);
        if (pending) {
          await pending;
          continue;
        }
        const asking = topUp(key, window, points, lease).finally(() => leasing.delete(key));
        leasing.set(key, asking);
        return asking;
      }
    },
    async giveBack(key, window, points) {
      const lease = current(key, window);
      if (!lease) return;
      // Kept locally up to one lease (the bound above); the rest goes back to the store.
      const keep = Math.min(lease.left + points, Math.max(lease.left, leaseSize(window)));
      const rest = lease.left + points - keep;
      lease.left = keep;
      await unask(storeFor(window), key, rest, lease.endsAt);
    },
  };
}
