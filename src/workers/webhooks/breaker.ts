import { backoffMs, type RetrySchedule } from '../../shared/retry.js';

// An endpoint's circuit breaker. Closed: deliveries go out up to the endpoint's share at once.
// After `failures` consecutive failed attempts it opens: nothing is sent to the endpoint (its
// deliveries wait, using up none of their retry schedule) until the probe is due. Then it is half
// open: one delivery at a time goes out (the probe); a success closes it, a failure opens it again
// for the next wait of `open` (doubling, up to its longest). Stored on the endpoint row
// (breaker_opened_at, breaker_probe_at, breaker_trips); the claim in sql.ts reads it.

export type BreakerSettings = { failures: number; open: RetrySchedule };

export type BreakerState = 'Closed' | 'Open' | 'HalfOpen';

/** The endpoint's row as lockEndpointHealth reads it. */
export type EndpointHealth = {
  consecutive_failures: number;
  breaker_trips: number;
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
  if (state === 'Closed' && h.consecutive_failures + 1 < settings.failures) return { opens: false };
  const trips = state === 'HalfOpen' ? h.breaker_trips + 1 : 1;
  return { opens: true, waitMs: backoffMs(settings.open, trips), trips };
}
