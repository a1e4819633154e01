import { backoffMs, type RetrySchedule } from '../../shared/retry.js';

// An endpoint's circuit breaker. Closed: deliveries go out up to the endpoint's share at once.
// After `failures` consecutive failed attempts it opens, and also when at least `rate.percent` %
// of its last attempts failed, once there were at least `rate.window` of them since it last
// closed (Convoy's rule: an endpoint that fails 4 times in 5 never fails 5 in a row, yet holds
// its whole share in flight with attempts that time out). Then it is open: nothing is sent to the endpoint (its
// deliveries wait, using up none of their retry schedule) until the probe is due. Then it is half
// open: one delivery at a time goes out (the probe); a success closes it, a failure opens it again
// for the next wait of `open` (doubling, up to its longest). Stored on the endpoint row
// (breaker_opened_at, breaker_probe_at, breaker_trips; the last attempts' outcomes as a bit mask,
// recent_failures_mask and recent_attempts, reset when it closes); the claim in sql.ts reads it.

/** rate.window: the attempts looked at (and the fewest that may open it); rate.percent: 0 turns the rule off. */
export type BreakerSettings = { failures: number; rate: { percent: number; window: number }; open: RetrySchedule };

export type BreakerState = 'Closed' | 'Open' | 'HalfOpen';

/** The endpoint's row as lockEndpointHealth reads it. */
export type EndpointHealth = {
  consecutive_failures: number;
  breaker_trips: number;
  /** Outcomes of the last recent_attempts attempts before this one, bit 0 the newest, 1 = failed. */
  recent_failures_mask: string;
  recent_attempts: number;
  open: boolean;
  probe_due: boolean | null;
};

export const breakerState = (h: Pick<EndpointHealth, 'open' | 'probe_due'>): BreakerState =>
  !h.open ? 'Closed' : h.probe_due ? 'HalfOpen' : 'Open';

/** What a failed attempt does to the breaker: opens it for waitMs (trips: opens in a row), or nothing. */
export type AfterFailure = { opens: false } | { opens: true; waitMs: number; trips: number };

export function afterFailure(h: EndpointHealth, settings: BreakerSettings): AfterFailure {
  const state = breakerState(h);
  // Open: an attempt that began before it opened; it changes nothing.
  if (state === 'Open') return { opens: false };
  if (state === 'Closed' && h.consecutive_failures + 1 < settings.failures && !rateExceeded(h, settings.rate))
    return { opens: false };
  const trips = state === 'HalfOpen' ? h.breaker_trips + 1 : 1;
  return { opens: true, waitMs: backoffMs(settings.open, trips), trips };
}

/** Failed attempts among the last `window` (this failure and those before it). */
export function recentFailures(h: Pick<EndpointHealth, 'recent_failures_mask' | 'recent_attempts'>, window: number) {
  const attempts = Math.min(h.recent_attempts + 1, window);
  let mask = (BigInt(h.recent_failures_mask) << 1n) | 1n;
  mask &= (1n << BigInt(attempts)) - 1n;
  let failed = 0;
  for (; mask > 0n; mask >>= 1n) failed += Number(mask & 1n);
  return { attempts, failed };
}

/** With this failure, at least rate.percent % of at least rate.window recent attempts failed. */
function rateExceeded(h: EndpointHealth, rate: BreakerSettings['rate']): boolean {
  if (rate.percent <= 0) return false;
  const { attempts, failed } = recentFailures(h, rate.window);
  return attempts >= rate.window && failed * 100 >= rate.percent * attempts;
}
