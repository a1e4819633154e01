import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.js';
import { addressKey } from '../auth/address-key.js';
import { OAuthError } from './oauth-error.js';

// The token endpoint's throttle, per gateway replica (in memory: it needs no PostgreSQL work and
// keeps working while PostgreSQL is down; N replicas behind a load balancer let through at most N
// times the limit). Fixed one-minute windows:
// - per client address (addressKey: IPv4 address or IPv6 /64), requests that did not authenticate
//   (invalid_client, invalid_request): past the limit these are answered slow_down instead, while
//   a valid secret from the same address (a load balancer's, say) is still served;
// - per client, every request that authenticated as that client, so nobody without its secret
//   can use up a client's budget.
// Over either limit: 429 slow_down (RFC 6749 §5.2 body; the error code registered for token
// endpoint responses that ask the client to slow down, RFC 8628 §3.5) with Retry-After.
export const throttleWindowSeconds = 60;

export type TokenThrottle = {
  /** Counts a request from this address that did not authenticate; throws OAuthError slow_down beyond the limit. */
  failure(address: string): Promise<void>;
  /** Counts a request authenticated as this client; throws OAuthError slow_down beyond the limit. */
  client(clientId: string): Promise<void>;
};

export function createTokenThrottle(
  oauth: Pick<Config['oauth'], 'tokenClientLimitPerMinute' | 'tokenAddressLimitPerMinute'>,
): TokenThrottle {
  const byAddress = new RateLimiterMemory({
    keyPrefix: 'oauth-token-address',
    points: oauth.tokenAddressLimitPerMinute,
    duration: throttleWindowSeconds,
  });
  const byClient = new RateLimiterMemory({
    keyPrefix: 'oauth-token-client',
    points: oauth.tokenClientLimitPerMinute,
    duration: throttleWindowSeconds,
  });

  async function consume(limiter: RateLimiterMemory, key: string, what: string, limit: number): Promise<void> {
    try {
      await limiter.consume(key, 1);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const retryAfterSeconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new OAuthError(
        'slow_down',
        `Too many ${what} (at most ${limit} per ${throttleWindowSeconds} s); retry after ` +
          `${retryAfterSeconds} s. Keep an access token until it expires instead of asking for one per call.`,
        false,
        retryAfterSeconds,
      );
    }
  }

  return {
    failure: (address) =>
      consume(
        byAddress,
        addressKey(address),
        'unauthenticated token requests from this address',
        oauth.tokenAddressLimitPerMinute,
      ),
    client: (clientId) =>
      consume(byClient, clientId.toLowerCase(), 'token requests for this client', oauth.tokenClientLimitPerMinute),
  };
}
