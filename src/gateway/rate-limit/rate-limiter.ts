import type { Pool } from '../../shared/db/pool.js';
import { AppError } from '../../shared/errors.js';
import { createLeasedCounter } from './leased-counter.js';

// Fixed one-minute windows per Integration Client, shared by every gateway replica through
// PostgreSQL and leased in blocks (leased-counter.ts, with its error bound): a client is never
// admitted beyond its limit across replicas, most requests cost no database round trip, and
// while PostgreSQL is unreachable each replica counts alone.
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

/** leaseMax: the most points (requests) one lease takes; 1 writes the shared counter on every request. */
export function createRateLimiter(pool: Pool, leaseMax = 50): RateLimiter {
  const counter = createLeasedCounter(pool, 'client', leaseMax);
  return async (clientId, limit) => {
    const policy = `"${policyName}";q=${limit};w=${windowSeconds}`;
    const { taken, remaining, msBeforeNext } = await counter.take(
      clientId,
      { points: limit, seconds: windowSeconds },
      1,
    );
    return {
      allowed: taken,
      limit,
      retryAfterSeconds: taken ? 0 : Math.max(1, Math.ceil(msBeforeNext / 1000)),
      headers: headers(policy, remaining, msBeforeNext),
    };
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
