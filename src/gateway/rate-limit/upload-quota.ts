import type { Pool } from '../../shared/db/pool.js';
import { AppError } from '../../shared/errors.js';
import type { BodyQuota } from '../http/body.js';
import type { GatewayContext } from '../http/state.js';
import type { RouteDefinition } from '../routes/route-definition.js';
import { createLeasedCounter } from './leased-counter.js';

// The request rate limit counts requests, but a request's cost is its body: one client sending
// 16 MiB batches back to back within its request limit keeps a gateway's cores busy parsing,
// producing and applying its data, and every other tenant waits (issue 12). So each client, and
// each tenant for all its clients together (issue 24), also has a quota of body bytes, charged
// before the body is read: from Content-Length, or chunk by chunk as a body of unknown length
// arrives. Counted across gateway replicas in leases of a twentieth of the window
// (leased-counter.ts, with its error bound), so spreading requests over replicas gains nothing
// and most bodies cost no database round trip. A window holds at least the largest body a route
// takes, so every body the size limits allow can pass; a client past its quota is answered 429
// before its body is read.

/** Sustained body bytes per second one client (or tenant) may send to all replicas, counted in windows. */
export type UploadWindow = { bytesPerSecond: number; windowSeconds: number; windowBytes: number };

/** Who sends a body: an Integration Client (its own quota, or null) and its tenant, or an address. */
export type Uploader = { client: string; tenant?: string | null; bytesPerSecond?: number | null };

/** The uploader of a request: its authenticated client, or its address. */
export const uploaderOf = (ctx: GatewayContext): Uploader => ({
  client: ctx.state.client?.clientId ?? ctx.ip,
  tenant: ctx.state.client?.tenantId,
  bytesPerSecond: ctx.state.client?.uploadBytesPerSecond,
});

/**
 * The quota a body is charged to: its client's (an Integration Client id, or an address when
 * unauthenticated), at the client's own bytesPerSecond (admin CLI `client upload-quota`) or the
 * gateway's default, and its tenant's, shared by all of the tenant's clients. charge throws 429
 * (UploadQuotaExceeded, saying when the full window ends) when `bytes` more would take either
 * past its window's bytes, and counts them in neither.
 */
export type UploadQuota = (uploader: Uploader) => BodyQuota;

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

export type UploadQuotaSettings = {
  clientBytesPerSecond: number;
  tenantBytesPerSecond: number;
  largestBodyBytes: number;
};

/** One kind of quota (client or tenant), counted per key in windows of its bytesPerSecond. */
function quotaKind(scope: 'client' | 'tenant', pool: Pool | null, largestBodyBytes: number) {
  const counter = createLeasedCounter(pool, `upload-${scope}`);
  const windows = new Map<number, UploadWindow>();
  const windowOf = (bytesPerSecond: number) => {
    let window = windows.get(bytesPerSecond);
    if (!window) windows.set(bytesPerSecond, (window = uploadWindow(bytesPerSecond, largestBodyBytes)));
    return { window, counted: { points: window.windowBytes, seconds: window.windowSeconds } };
  };
  return {
    /** Counts bytes for key, or throws 429 (counting nothing) when they do not fit. */
    async take(key: string, bytesPerSecond: number, bytes: number): Promise<void> {
      const { window, counted } = windowOf(bytesPerSecond);
      const { taken, msBeforeNext } = await counter.take(key, counted, bytes);
      // A refused body does not count: the client may send it once the window has room.
      if (!taken) throw refusal(scope, window, msBeforeNext);
    },
    async giveBack(key: string, bytesPerSecond: number, bytes: number): Promise<void> {
      await counter.giveBack(key, windowOf(bytesPerSecond).counted, bytes);
    },
  };
}

/** 429 upload_quota_exceeded; msBeforeRoom: when the window ends (the lingering close waits for it). */
export class UploadQuotaExceeded extends AppError {
  constructor(
    scope: 'client' | 'tenant',
    window: UploadWindow,
    readonly msBeforeRoom: number,
  ) {
    const { bytesPerSecond, windowBytes, windowSeconds } = window;
    const retryAfterSeconds = Math.max(1, Math.ceil(msBeforeRoom / 1000));
    super(
      'upload_quota_exceeded',
      `Upload quota${scope === 'tenant' ? " of the client's tenant" : ''} of ${windowBytes} body bytes per ${windowSeconds} s exceeded; retry after ${retryAfterSeconds} s.`,
      null,
      { quota: scope, bytesPerSecond, windowBytes, windowSeconds, retryAfterSeconds },
      retryAfterSeconds,
    );
  }
}

const refusal = (scope: 'client' | 'tenant', window: UploadWindow, msBeforeNext: number) =>
  new UploadQuotaExceeded(scope, window, msBeforeNext);

/** pool: where replicas share the counts (null: counted in this process only). */
export function createUploadQuota(settings: UploadQuotaSettings, pool: Pool | null): UploadQuota {
  const clients = quotaKind('client', pool, settings.largestBodyBytes);
  const tenants = quotaKind('tenant', pool, settings.largestBodyBytes);
  return ({ client, tenant, bytesPerSecond }) => {
    const own = bytesPerSecond ?? settings.clientBytesPerSecond;
    return {
      async charge(bytes) {
        if (bytes <= 0) return;
        await clients.take(client, own, bytes);
        // A client an operator gave a quota above its tenant's is held to its own alone.
        if (!tenant || (bytesPerSecond ?? 0) > settings.tenantBytesPerSecond) return;
        try {
          await tenants.take(tenant, settings.tenantBytesPerSecond, bytes);
        } catch (err) {
          await clients.giveBack(client, own, bytes);
          throw err;
        }
      },
    };
  };
}
