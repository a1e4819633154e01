import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Pool } from '../../shared/db/pool.js';
import { AppError, unavailable } from '../../shared/errors.js';

// Fixed one-minute windows per Integration Client, counted in PostgreSQL (table rate_limits)
// so every gateway replica shares them. While PostgreSQL is unreachable each replica counts in
// memory instead (the library's insurance limiter), so a client keeps its limit per replica and
// the rate limit never turns an outage into errors of its own.
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

export function createRateLimiter(pool: Pool): RateLimiter {
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

  return async (clientId, limit) => {
    const policy = `"${policyName}";q=${limit};w=${windowSeconds}`;
    try {
      const res = await limiterFor(limit).consume(clientId, 1);
      return {
        allowed: true,
        limit,
        retryAfterSeconds: 0,
        headers: headers(policy, res.remainingPoints, res.msBeforeNext),
      };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw unavailable('The rate limiter store');
      const retryAfterSeconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      return { allowed: false, limit, retryAfterSeconds, headers: headers(policy, 0, err.msBeforeNext) };
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
