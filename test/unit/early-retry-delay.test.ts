import type { Context } from 'koa';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { delayEarlyRetries } from '../../src/gateway/http/early-retry-delay.js';

// A client that ignores Retry-After is answered no sooner than it should have come back.

const refusal = (clientId: string | null, retryAfter = 4) => {
  const headers: Record<string, string> = {};
  return {
    ctx: {
      status: 0,
      ip: '192.0.2.1',
      state: clientId ? { client: { clientId } } : {},
      response: { get: (name: string) => headers[name] ?? '' },
    } as unknown as Context,
    // What the error handler does inside next(): answer 429 with Retry-After.
    refuse(ctx: Context) {
      ctx.status = 429;
      headers['Retry-After'] = String(retryAfter);
    },
  };
};

/** Runs one request through the middleware; resolves to when (fake ms) it was answered. */
async function ask(mw: ReturnType<typeof delayEarlyRetries>, clientId: string | null, status = 429) {
  const r = refusal(clientId);
  let answeredAt = -1;
  const done = mw(r.ctx as never, async () => {
    if (status === 429) r.refuse(r.ctx);
    else r.ctx.status = status;
  }).then(() => (answeredAt = Date.now()));
  return { done, answeredAt: () => answeredAt };
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(0);
});
afterEach(() => vi.useRealTimers());

describe('early retries are answered late', () => {
  it('answers the first refusal at once and a retry before Retry-After only once it has passed', async () => {
    const mw = delayEarlyRetries();
    const first = await ask(mw, 'a');
    await first.done;
    expect(first.answeredAt()).toBe(0);

    vi.setSystemTime(1000);
    const early = await ask(mw, 'a');
    await vi.advanceTimersByTimeAsync(2999);
    expect(early.answeredAt()).toBe(-1);
    await vi.advanceTimersByTimeAsync(1);
    await early.done;
    expect(early.answeredAt()).toBe(4000);
  });

  it('does not hold another client, a success, or a client that waited', async () => {
    const mw = delayEarlyRetries();
    await (
      await ask(mw, 'a')
    ).done;
    const other = await ask(mw, 'b');
    await other.done;
    expect(other.answeredAt()).toBe(0);
    const ok = await ask(mw, 'a', 200);
    await ok.done;
    expect(ok.answeredAt()).toBe(0);
    vi.setSystemTime(4000);
    const patient = await ask(mw, 'a');
    await patient.done;
    expect(patient.answeredAt()).toBe(4000);
  });

  it('holds at most maxHoldMs, and at most maxHeldPerClient requests of one client', async () => {
    const mw = delayEarlyRetries({ maxHoldMs: 1000, maxHeldPerClient: 2 });
    await (
      await ask(mw, null)
    ).done; // unauthenticated: by address
    const held = [await ask(mw, null), await ask(mw, null)];
    const third = await ask(mw, null);
    await third.done;
    expect(third.answeredAt()).toBe(0); // over the per-client bound: at once
    await vi.advanceTimersByTimeAsync(1000);
    await Promise.all(held.map((h) => h.done));
    expect(held.map((h) => h.answeredAt())).toEqual([1000, 1000]);
  });
});
