import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../shared/errors.js';
import type { BodyQuota } from '../http/body.js';
import type { RouteDefinition } from '../routes/route-definition.js';

// The request rate limit counts requests, but a request's cost is its body: one client sending
// 16 MiB batches back to back within its request limit keeps a gateway's cores busy parsing,
// producing and applying its data, and every other tenant waits (issue 12). So each client also
// has a quota of body bytes, charged before the body is read: from Content-Length, or chunk by
// chunk as a body of unknown length arrives. Counted per gateway replica, in memory: it shares out a replica's own CPU, and
// needs no round trip. A window holds at least the largest body a route takes, so every body
// the size limits allow can pass; a client past its quota is answered 429 before its body is
// parsed.

/** Sustained body bytes per second one client may send to one replica, counted in windows. */
export type UploadWindow = { bytesPerSecond: number; windowSeconds: number; windowBytes: number };

/**
 * A client's quota (an Integration Client id, or an address when unauthenticated), at its own
 * bytesPerSecond (admin CLI `client upload-quota`) or the gateway's default. charge throws 429
 * when `bytes` more would take it past the window's bytes, and does not count them.
 */
export type UploadQuota = (client: string, bytesPerSecond?: number | null) => BodyQuota;

/** The largest body any of routes takes (a window must hold it). */
export const largestBody = (
  routes: readonly Pick<RouteDefinition, 'bodyLimitBytes'>[],
  defaultBodyLimitBytes: number,
) => Math.max(defaultBodyLimitBytes, ...routes.map((r) => r.bodyLimitBytes ?? 0));

/** The shortest whole-second window that holds largestBodyBytes. */
export function uploadWindow(bytesPerSecond: number, largestBodyBytes: number): UploadWindow {
  const windowSeconds = Math.max(1, Math.ceil(largestBodyBytes / bytesPerSecond));
  return { bytesPerSecond, windowSeconds, windowBytes: bytesPerSecond * windowSeconds };
}

export function createUploadQuota(defaultBytesPerSecond: number, largestBodyBytes: number): UploadQuota {
  // rate-limiter-flexible fixes points and duration per instance: one per distinct quota.
  const limiters = new Map<number, { window: UploadWindow; limiter: RateLimiterMemory }>();
  const limiterFor = (bytesPerSecond: number) => {
    let entry = limiters.get(bytesPerSecond);
    if (!entry) {
      const window = uploadWindow(bytesPerSecond, largestBodyBytes);
      const limiter = new RateLimiterMemory({
        keyPrefix: `upload-${bytesPerSecond}`,
        points: window.windowBytes,
        duration: window.windowSeconds,
      });
      entry = { window, limiter };
      limiters.set(bytesPerSecond, entry);
    }
    return entry;
  };

  return (client, bytesPerSecond) => {
    const { window, limiter } = limiterFor(bytesPerSecond ?? defaultBytesPerSecond);
    const { windowBytes, windowSeconds } = window;
    const refused = (msBeforeNext: number) => {
      const retryAfterSeconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
      return new AppError(
        'upload_quota_exceeded',
        `Upload quota of ${windowBytes} body bytes per ${windowSeconds} s exceeded; retry after ${retryAfterSeconds} s.`,
        null,
        { bytesPerSecond: window.bytesPerSecond, windowBytes, windowSeconds, retryAfterSeconds },
        retryAfterSeconds,
      );
    };
    return {
      async charge(bytes) {
        if (bytes <= 0) return;
        try {
          await limiter.consume(client, bytes);
        } catch (err) {
          if (!(err instanceof RateLimiterRes)) throw err;
          // A refused body does not count: the client may send it once the window has room.
          await limiter.reward(client, bytes);
          throw refused(err.msBeforeNext);
        }
      },
    };
  };
}
