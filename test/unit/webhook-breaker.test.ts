import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  recentFailures,
  type BreakerSettings,
  type EndpointHealth,
} from '../../src/workers/webhooks/breaker.js';

const settings: BreakerSettings = {
  failures: 5,
  rate: { percent: 70, window: 10 },
  open: { baseMs: 1000, maxMs: 8000, attempts: Infinity },
};

/** The endpoint's row after these outcomes, oldest first (true = failed). */
function health(outcomes: boolean[], window = 10): EndpointHealth {
  let mask = 0n;
  let consecutive = 0;
  for (const failed of outcomes) {
    mask = ((mask << 1n) | (failed ? 1n : 0n)) & ((1n << BigInt(window)) - 1n);
    consecutive = failed ? consecutive + 1 : 0;
  }
  return {
    consecutive_failures: consecutive,
    breaker_trips: 0,
    recent_failures_mask: mask.toString(),
    recent_attempts: Math.min(outcomes.length, window),
    open: false,
    probe_due: null,
  };
}

const pattern = (n: number, fails: (i: number) => boolean) => Array.from({ length: n }, (_, i) => fails(i));

describe('webhook breaker', () => {
  it('counts this failure and those before it within the window', () => {
    expect(recentFailures(health([]), 10)).toEqual({ attempts: 1, failed: 1 });
    expect(recentFailures(health([false, true, false]), 10)).toEqual({ attempts: 4, failed: 2 });
    expect(recentFailures(health(pattern(30, () => true)), 10)).toEqual({ attempts: 10, failed: 10 });
  });

  it('opens after `failures` in a row, as before', () => {
    expect(afterFailure(health([true, true, true]), settings)).toEqual({ opens: false });
    expect(afterFailure(health([true, true, true, true]), settings)).toMatchObject({ opens: true, trips: 1 });
  });

  it('opens when 70 % of the last 10 failed though never 5 in a row (4 failures in 5)', () => {
    // F F F F S F F F F S, then this failure: the last 10 hold 8 failures.
    const h = health(pattern(10, (i) => i % 5 !== 4));
    expect(h.consecutive_failures).toBe(0);
    expect(afterFailure(h, settings)).toMatchObject({ opens: true, waitMs: expect.any(Number), trips: 1 });
  });

  it('stays closed below the rate, and before the window has filled', () => {
    // Every other attempt fails: 50 %.
    expect(afterFailure(health(pattern(20, (i) => i % 2 === 1)), settings)).toEqual({ opens: false });
    // 4 failures in 5 but only 5 + 1 attempts since it closed: too few to judge a rate.
    expect(afterFailure(health(pattern(5, (i) => i !== 4)), settings)).toEqual({ opens: false });
  });

  it('can be turned off (percent 0): only failures in a row open it', () => {
    const off = { ...settings, rate: { percent: 0, window: 10 } };
    expect(afterFailure(health(pattern(10, (i) => i % 5 !== 4)), off)).toEqual({ opens: false });
  });

  it('an attempt that began before the breaker opened changes nothing', () => {
    const open = { ...health(pattern(10, () => true)), open: true, probe_due: false };
    expect(afterFailure(open, settings)).toEqual({ opens: false });
  });
});
