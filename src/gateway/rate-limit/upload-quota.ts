import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../shared/errors.js';
import type { BodyQuota } from '../http/body.js';
import type { RouteDefinition } from '../routes/route-definition.js';

// The request rate limit counts requests, but a request's cost is its body: one client sending
// 16 MiB batches back to back within its request limit keeps a gateway's cores busy parsing,
// producing and applying its data, and every other tenant waits (issue 12). So each client also
// has a quota of body bytes, charged before the body is read: from Content-Length, or as read for
// a chunked body. Counted per gateway replica, in memory: it shares out a replica's own CPU, and
// needs no round trip. A window holds at least the largest body a route takes, so every body
// the size limits allow can pass; a client past its quota is answered 429 before its body is
// parsed.

/** Sustained body bytes per second one client may send to one replica, counted in windows. */
export type UploadWindow = { bytesPerSecond: number; windowSeconds: number; windowBytes: number };

/**
 * One client's quota (an Integration Client id, or an address when unauthenticated). charge
 * throws 429 when `bytes` more would take it past the window's bytes; record counts bytes
 * already read (a chunked body), refusing its next bodies if it went past; check throws 429 when
 * it is past already (before a body of unknown length).
 */
export type UploadQuota = (client: string) => BodyQuota;

/** The shortest whole-second window that holds the largest body any of routes takes. */
export function uploadWindow(
  bytesPerSecond: number,
  routes: readonly Pick<RouteDefinition, 'bodyLimitBytes'>[],
  defaultBodyLimitBytes: number,
): UploadWindow {
  const largestBody = Math.max(defaultBodyLimitBytes, ...routes.map((r) => r.bodyLimitBytes ?? 0));
  const windowSeconds = Math.max(1, Math.ceil(largestBody / bytesPerSecond));
  return { bytesPerSecond, windowSeconds, windowBytes: bytesPerSecond * windowSeconds };
}

export function createUploadQuota({ bytesPerSecond, windowSeconds, windowBytes }: UploadWindow): UploadQuota {
  const limiter = new RateLimiterMemory({ keyPrefix: 'upload', points: windowBytes, duration: windowSeconds });
  const refused = (msBeforeNext: number) => {
    const retryAfterSeconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
    return new AppError(
      'upload_quota_exceeded',
      `Upload quota of ${windowBytes} body bytes per ${windowSeconds} s exceeded; retry after ${retryAfterSeconds} s.`,
      null,
      { bytesPerSecond, windowBytes, windowSeconds, retryAfterSeconds },
      retryAfterSeconds,
    );
  };
  const check = async (client: string) => {
    const seen = await limiter.get(client);
    if (seen && seen.consumedPoints >= windowBytes) throw refused(seen.msBeforeNext);
  };
  return (client) => ({
    async charge(bytes) {
      if (bytes <= 0) return check(client);
      try {
        await limiter.consume(client, bytes);
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        // A refused body does not count: the client may send it once the window has room.
        await limiter.reward(client, bytes);
        throw refused(err.msBeforeNext);
      }
    },
    async record(bytes) {
      if (bytes > 0) await limiter.penalty(client, bytes);
    },
    check: () => check(client),
  });
}
