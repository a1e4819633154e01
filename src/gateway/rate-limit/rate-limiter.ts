import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Pool } from '../../shared/db/pool.js';
import { AppError, unavailable } from '../../shared/errors.js';

// Fixed one-minute windows per Integration Client, counted in PostgreSQL (table rate_limits)
// so every gateway replica shares them. A replica does not write the counter for every request:
// it leases a block of the window's points at once (block.ts) and spends it locally, so a
// client is never admitted beyond its limit across replicas, while most requests cost no
// database round trip. While PostgreSQL is unreachable each replica counts in memory instead
// (the library's insurance limiter), so a client keeps its limit per replica and the rate limit
// never turns an outage into errors of its own.
// Header format: IETF draft-ietf-httpapi-ratelimit-headers.
export const windowSeconds = 60;
const policyName = 'client';

export type RateLimitDecision = {
  allowed: boolean;
  limit: number;
  retryAfterSeconds: number;
  headers: Record<string, string>;
};
export type RateLimiter = (clientId: string, limitPerMinute: number) => Promise<RateLimitDecision>;

/** Points of the current window this replica holds for a client, granted by the shared store. */
type Lease = { limit: number; left: number; storeLeft: number; endsAt: number };

/**
 * leaseMax: the most points one lease takes (1: every request writes the shared counter). A
 * lease takes a twentieth of the limit, at least 1 and at most leaseMax: what a replica may hold
 * unused when a window ends, so a client spread over R replicas can be refused up to
 * (R − 1) × (lease − 1) requests before reaching its limit; it is never admitted beyond it.
 */
export function createRateLimiter(pool: Pool, leaseMax = 50): RateLimiter {
  // rate-limiter-flexible fixes `points` per instance: keep one per distinct limit,
  // all on the same table and keys, so a changed limit applies to the running window.
  const limiters = new Map<number, RateLimiterPostgres>();
  const limiterFor = (points: number) => {
    let limiter = limiters.get(points);
    if (!limiter) {
      limiter = new RateLimiterPostgres({
        storeClient: pool,
        storeType: 'pool',
        tableName: 'rate_limits',
        tableCreated: true,
        keyPrefix: 'client',
        points,
        duration: windowSeconds,
        insuranceLimiter: new RateLimiterMemory({ keyPrefix: 'client', points, duration: windowSeconds }),
      });
      limiters.set(points, limiter);
    }
    return limiter;
  };
  const leases = new Map<string, Lease>();
  const leasing = new Map<string, Promise<Lease>>();

  /** Takes the next block from the store: all of it, what is left of the window, or nothing. */
  async function newLease(clientId: string, limit: number): Promise<Lease> {
    const block = Math.max(1, Math.min(leaseMax, Math.floor(limit / 20)));
    try {
      const res = await limiterFor(limit).consume(clientId, block);
      return { limit, left: block, storeLeft: res.remainingPoints, endsAt: Date.now() + res.msBeforeNext };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw unavailable('The rate limiter store');
      // Refused: the counter went past the limit; what it held before this block was still free.
      const left = Math.max(0, Math.min(block, limit - (err.consumedPoints - block)));
      return { limit, left, storeLeft: 0, endsAt: Date.now() + err.msBeforeNext };
    }
  }

  return async (clientId, limit) => {
    const policy = `"${policyName}";q=${limit};w=${windowSeconds}`;
    for (;;) {
      const lease = leases.get(clientId);
      const current = lease && lease.limit === limit && lease.endsAt > Date.now();
      if (current && lease.left > 0) {
        lease.left--;
        return {
          allowed: true,
          limit,
          retryAfterSeconds: 0,
          headers: headers(policy, lease.storeLeft + lease.left, lease.endsAt - Date.now()),
        };
      }
      // Spent for this window, and the store had nothing more: refused until the window ends,
      // without asking the store again.
      if (current && lease.storeLeft === 0) {
        const msLeft = lease.endsAt - Date.now();
        return {
          allowed: false,
          limit,
          retryAfterSeconds: Math.max(1, Math.ceil(msLeft / 1000)),
          headers: headers(policy, 0, msLeft),
        };
      }
      // One lease request per client at a time; concurrent requests wait for it and try again.
      let pending = leasing.get(clientId);
      if (!pending) {
        pending = newLease(clientId, limit).finally(() => leasing.delete(clientId));
        leasing.set(clientId, pending);
        leases.set(clientId, await pending);
      } else {
        await pending;
      }
    }
  };
}

export function rateLimitedError(decision: RateLimitDecision): AppError {
  return new AppError(
    'rate_limited',
    `Rate limit of ${decision.limit} requests per ${windowSeconds} s exceeded; retry after ${decision.retryAfterSeconds} s.`,
    null,
    { limit: decision.limit, windowSeconds, retryAfterSeconds: decision.retryAfterSeconds },
    decision.retryAfterSeconds,
  );
}

function headers(policy: string, remaining: number, msBeforeNext: number): Record<string, string> {
  const reset = Math.max(0, Math.ceil(msBeforeNext / 1000));
  return {
    'RateLimit-Policy': policy,
    RateLimit: `"${policyName}";r=${Math.max(0, remaining)};t=${reset}`,
  };
}
