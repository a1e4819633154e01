import { RateLimiterMemory } from 'rate-limiter-flexible';
import { AppError } from '../../shared/errors.js';

/** Codes that mean "a credential was looked up and refused": each one cost a database query. */
const lookedUp = new Set(['invalid_credential', 'revoked_credential', 'expired_credential']);

/**
 * Cheap rejection of unauthenticated traffic: an address that sent more than perMinute refused
 * credentials within a minute is answered 429 before any lookup, so random well-formed keys cannot
 * turn into one PostgreSQL query each. Counted per gateway replica, in memory (no shared store is
 * needed to stop a flood; each replica stops it on its own).
 */
export function createFailedAuthLimiter(perMinute: number) {
  const failures = new RateLimiterMemory({ keyPrefix: 'auth-failures', points: perMinute, duration: 60 });
  return {
    /** Throws 429 when this address is over its allowance. */
    async check(address: string): Promise<void> {
      const seen = await failures.get(address);
      if (!seen || seen.consumedPoints < perMinute) return;
      const retryAfterSeconds = Math.max(1, Math.ceil(seen.msBeforeNext / 1000));
      throw new AppError(
        'rate_limited',
        `Too many refused credentials from this address; retry after ${retryAfterSeconds} s.`,
        null,
        { limit: perMinute, windowSeconds: 60, retryAfterSeconds },
        retryAfterSeconds,
      );
    },
    /** Counts err against the address when it is a refused credential. */
    async record(address: string, err: unknown): Promise<void> {
      if (err instanceof AppError && lookedUp.has(err.code)) await failures.penalty(address, 1);
    },
  };
}
