import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.js';
import { OAuthError } from './token-issuer.js';

// The token endpoint's throttle, per gateway replica (in memory: it answers before any PostgreSQL
// work and keeps working while PostgreSQL is down; N replicas behind a load balancer let through at
// most N times the limit). Fixed one-minute windows:
// - per source address, every request, checked first (an IPv6 address counts by its /64, the
//   smallest block one host is usually given);
// - per client, every request that authenticated as that client, so nobody without its secret
//   can use up a client's budget.
// Over either limit: 429 slow_down (RFC 6749 §5.2 body; the error code registered for token
// endpoint responses that ask the client to slow down, RFC 8628 §3.5) with Retry-After.
export const throttleWindowSeconds = 60;

export type TokenThrottle = {
  /** Counts a request from this address; throws OAuthError slow_down beyond the limit. */
  address(address: string): Promise<void>;
  /** Counts a request authenticated as this client; throws OAuthError slow_down beyond the limit. */
  client(clientId: string): Promise<void>;
};

/** The key an address counts under: IPv4 (IPv4-mapped IPv6 included) as is, IPv6 by its /64. */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  return `${(ip as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}

export function createTokenThrottle(
  config: Pick<Config, 'oauthTokenClientLimitPerMinute' | 'oauthTokenAddressLimitPerMinute'>,
): TokenThrottle {
  const byAddress = new RateLimiterMemory({
    keyPrefix: 'oauth-token-address',
    points: config.oauthTokenAddressLimitPerMinute,
    duration: throttleWindowSeconds,
  });
  const byClient = new RateLimiterMemory({
    keyPrefix: 'oauth-token-client',
    points: config.oauthTokenClientLimitPerMinute,
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
        `Too many token requests ${what} (at most ${limit} per ${throttleWindowSeconds} s); retry after ` +
          `${retryAfterSeconds} s. Keep an access token until it expires instead of asking for one per call.`,
        false,
        retryAfterSeconds,
      );
    }
  }

  return {
    address: (address) =>
      consume(byAddress, addressKey(address), 'from this address', config.oauthTokenAddressLimitPerMinute),
    client: (clientId) =>
      consume(byClient, clientId.toLowerCase(), 'for this client', config.oauthTokenClientLimitPerMinute),
  };
}
