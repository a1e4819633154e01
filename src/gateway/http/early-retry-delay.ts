import type { Middleware } from 'koa';
import type { GatewayState } from './state.js';

const maxHeld = 1024;
const maxTracked = 100_000;

/**
 * A client refused with 429 that asks again before its Retry-After has passed is answered no
 * sooner than that time (at most maxHoldMs later). Refusing is cheap but not free: a client that
 * ignores Retry-After and retries at once on fresh connections makes the gateway authenticate and
 * refuse thousands of requests a second, at every other tenant's expense. Held, each of its
 * connections costs an idle socket (its body is not read: TCP stops the sender) until then.
 * Bounded: at most maxHeldPerClient requests of one client and maxHeld in all are held; beyond,
 * refusals are answered at once.
 */
export function delayEarlyRetries({
  maxHoldMs = 5000,
  maxHeldPerClient = 16,
}: { maxHoldMs?: number; maxHeldPerClient?: number } = {}): Middleware<GatewayState> {
  /** Per client (or address): until when it was told to wait. */
  const waitUntil = new Map<string, number>();
  const heldOf = new Map<string, number>();
  let held = 0;

  return async (ctx, next) => {
    await next();
    if (ctx.status !== 429) return;
    const retryAfter = Number(ctx.response.get('Retry-After'));
    if (!Number.isFinite(retryAfter)) return;
    const who = ctx.state.client ? `client:${ctx.state.client.clientId}` : `address:${ctx.ip}`;
    const now = Date.now();
    const until = waitUntil.get(who) ?? 0;
    // Told to wait and did not: answer when it should have come back.
    const holdMs = Math.min(until - now, maxHoldMs);
    const mine = heldOf.get(who) ?? 0;
    if (holdMs > 0 && held < maxHeld && mine < maxHeldPerClient) {
      held++;
      heldOf.set(who, mine + 1);
      try {
        await new Promise((resolve) => setTimeout(resolve, holdMs));
      } finally {
        held--;
        const left = (heldOf.get(who) ?? 1) - 1;
        if (left > 0) heldOf.set(who, left);
        else heldOf.delete(who);
      }
      return; // its Retry-After still counts from the first refusal
    }
    if (until <= now) {
      if (waitUntil.size >= maxTracked) forgetExpired(waitUntil, now);
      waitUntil.set(who, now + retryAfter * 1000);
    }
  };
}

function forgetExpired(waitUntil: Map<string, number>, now: number): void {
  for (const [who, until] of waitUntil) if (until <= now) waitUntil.delete(who);
  // All still waiting: drop the oldest (a Map iterates in insertion order).
  for (const who of waitUntil.keys()) {
    if (waitUntil.size < maxTracked) break;
    waitUntil.delete(who);
  }
}
