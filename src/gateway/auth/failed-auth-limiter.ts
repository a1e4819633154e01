import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../shared/errors.js';
import { addressKey } from './address-key.js';

/** Codes that mean "a credential of the right form was refused". */
const refused = new Set(['invalid_credential', 'revoked_credential', 'expired_credential']);

/**
 * Refused credentials per client address (addressKey: IPv4 address or IPv6 /64): past perMinute
 * within a minute, that address's refused credentials are answered 429 instead of 401. Only
 * refused credentials count and only they are answered 429, so a valid key is never refused for
 * what others sent from the same address (a load balancer's, say). PostgreSQL is not what this
 * protects: telling a made-up key apart costs no query (see KnownKeys). Counted per gateway
 * replica, in memory.
 */
export function createFailedAuthLimiter(perMinute: number) {
  const failures = new RateLimiterMemory({ keyPrefix: 'auth-failures', points: perMinute, duration: 60 });
  return {
    /** Counts err against the address when it is a refused credential; over the allowance, a 429 to throw instead. */
    async refusal(address: string, err: unknown): Promise<unknown> {
      if (!(err instanceof AppError && refused.has(err.code))) return err;
      try {
        await failures.consume(addressKey(address), 1);
        return err;
      } catch (res) {
        if (!(res instanceof RateLimiterRes)) throw res;
        const retryAfterSeconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        return new AppError(
          'rate_limited',
          `Too many refused credentials from this address; retry after ${retryAfterSeconds} s.`,
          null,
          { limit: perMinute, windowSeconds: 60, retryAfterSeconds },
          retryAfterSeconds,
        );
      }
    },
  };
}
