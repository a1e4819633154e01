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

/** What one outcome did to the breaker: a success closed it (it was open), a failure opened it. */
export type OutcomeEffect = { closed: boolean; opened: (AfterFailure & { opens: true }) | null };

/** An endpoint's health after a run of outcomes, as updateEndpointsHealth (sql.ts) writes it. */
export type HealthAfter = {
  failures: number;
  mask: string;
  attempts: number;
  trips: number;
  /** breaker_opened_at: 0 kept, 1 cleared, 2 now, 3 now unless already set. */
  opened: 0 | 1 | 2 | 3;
  /** breaker_probe_at: null kept, -1 cleared, else now + this many ms. */
  probeMs: number | null;
  succeeded: boolean;
  failed: boolean;
  failedLast: boolean;
};

/**
 * The outcomes of an endpoint's attempts recorded together (in the order they finished; true =
 * failed), applied one after another as separate recordings would apply them: each success
 * resets the failures and closes the breaker (when it was open, the window starts afresh), each
 * failure counts and may open it (afterFailure, on the health as the outcomes before it left it).
 */
export function afterOutcomes(
  before: EndpointHealth,
  failedInOrder: boolean[],
  settings: BreakerSettings,
): { effects: OutcomeEffect[]; after: HealthAfter } {
  const window = settings.rate.window;
  const keep = (1n << BigInt(window)) - 1n;
  const h = { ...before };
  // breaker_opened_at against its value before: kept, cleared, now, or coalesce(it, now)
  let opened: HealthAfter['opened'] = 0;
  let probeMs: number | null = null;
  const effects: OutcomeEffect[] = [];
  for (const failed of failedInOrder) {
    const mask = BigInt(h.recent_failures_mask);
    if (!failed) {
      effects.push({ closed: h.open, opened: null });
      h.recent_failures_mask = (h.open ? 0n : (mask << 1n) & keep).toString();
      h.recent_attempts = h.open ? 0 : Math.min(h.recent_attempts + 1, window);
      Object.assign(h, { consecutive_failures: 0, breaker_trips: 0, open: false, probe_due: null });
      opened = 1;
      probeMs = -1;
      continue;
    }
    const next = afterFailure(h, settings);
    effects.push({ closed: false, opened: next.opens ? next : null });
    h.consecutive_failures++;
    h.recent_failures_mask = (((mask << 1n) | 1n) & keep).toString();
    h.recent_attempts = Math.min(h.recent_attempts + 1, window);
    if (next.opens) {
      opened = opened === 0 ? 3 : opened === 1 ? 2 : opened;
      probeMs = next.waitMs;
      Object.assign(h, { open: true, probe_due: false, breaker_trips: next.trips });
    }
  }
  return {
    effects,
    after: {
      failures: h.consecutive_failures,
      mask: h.recent_failures_mask,
      attempts: h.recent_attempts,
      trips: h.breaker_trips,
      opened,
      probeMs,
      succeeded: failedInOrder.includes(false),
      failed: failedInOrder.includes(true),
      failedLast: failedInOrder.at(-1) === true,
    },
  };
}
