import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  afterOutcomes,
  type BreakerSettings,
  type EndpointHealth,
  type HealthAfter,
} from '../../src/workers/webhooks/breaker.js';

// Outcomes recorded together (record.ts, one transaction for many attempts) must leave an
// endpoint as recording them one by one did (the statements before batching: a success reset the
// failures and closed the breaker, a failure counted and maybe opened it), and report the same
// breaker changes for each. The row is modelled here with symbolic times: T is the transaction's
// now(), 'T+ms' a probe that many ms after it.

const settings: BreakerSettings = {
  failures: 5,
  rate: { percent: 70, window: 10 },
  open: { baseMs: 1000, maxMs: 8000, attempts: Infinity },
};

type Row = {
  consecutive_failures: number;
  breaker_trips: number;
  recent_failures_mask: string;
  recent_attempts: number;
  opened_at: string | null;
  probe_at: string | null;
  probe_due: boolean | null;
};

const healthOf = (r: Row): EndpointHealth => ({
  consecutive_failures: r.consecutive_failures,
  breaker_trips: r.breaker_trips,
  recent_failures_mask: r.recent_failures_mask,
  recent_attempts: r.recent_attempts,
  open: r.opened_at !== null,
  probe_due: r.probe_due,
});

/** The statements before batching, one outcome at a time (the old endpointSucceeded / endpointFailed). */
function oneByOne(start: Row, failedInOrder: boolean[]) {
  let row = { ...start };
  const effects: { closed: boolean; opened: number | null }[] = [];
  const keep = (1n << BigInt(settings.rate.window)) - 1n;
  for (const failed of failedInOrder) {
    const mask = BigInt(row.recent_failures_mask);
    if (!failed) {
      const open = row.opened_at !== null;
      effects.push({ closed: open, opened: null });
      row = {
        consecutive_failures: 0,
        breaker_trips: 0,
        recent_failures_mask: (open ? 0n : (mask << 1n) & keep).toString(),
        recent_attempts: open ? 0 : Math.min(row.recent_attempts + 1, settings.rate.window),
        opened_at: null,
        probe_at: null,
        probe_due: null,
      };
      continue;
    }
    const next = afterFailure(healthOf(row), settings);
    effects.push({ closed: false, opened: next.opens ? next.waitMs : null });
    row = {
      ...row,
      consecutive_failures: row.consecutive_failures + 1,
      recent_failures_mask: (((mask << 1n) | 1n) & keep).toString(),
      recent_attempts: Math.min(row.recent_attempts + 1, settings.rate.window),
      ...(next.opens
        ? { opened_at: row.opened_at ?? 'T', probe_at: `T+${next.waitMs}`, breaker_trips: next.trips, probe_due: false }
        : {}),
    };
  }
  return { row, effects };
}

/** updateEndpointsHealth's SET, applied to the row as it was. */
function applied(start: Row, a: HealthAfter): Row {
  const opened = [start.opened_at, null, 'T', start.opened_at ?? 'T'][a.opened]!;
  const probe = a.probeMs === null ? start.probe_at : a.probeMs < 0 ? null : `T+${a.probeMs}`;
  return {
    consecutive_failures: a.failures,
    breaker_trips: a.trips,
    recent_failures_mask: a.mask,
    recent_attempts: a.attempts,
    opened_at: opened,
    probe_at: probe,
    probe_due: null,
  };
}

const comparable = (r: Row) => ({ ...r, probe_due: undefined });

function random(seed: number) {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe('webhook breaker: outcomes recorded together', () => {
  const starts: Row[] = [
    // closed, fresh
    {
      consecutive_failures: 0,
      breaker_trips: 0,
      recent_failures_mask: '0',
      recent_attempts: 0,
      opened_at: null,
      probe_at: null,
      probe_due: null,
    },
    // closed, four failures in a row
    {
      consecutive_failures: 4,
      breaker_trips: 0,
      recent_failures_mask: '15',
      recent_attempts: 9,
      opened_at: null,
      probe_at: null,
      probe_due: null,
    },
    // open, probe not due (attempts that began before it opened)
    {
      consecutive_failures: 5,
      breaker_trips: 1,
      recent_failures_mask: '31',
      recent_attempts: 10,
      opened_at: 'earlier',
      probe_at: 'later',
      probe_due: false,
    },
    // half open: the probe is due
    {
      consecutive_failures: 5,
      breaker_trips: 2,
      recent_failures_mask: '1023',
      recent_attempts: 10,
      opened_at: 'earlier',
      probe_at: 'earlier',
      probe_due: true,
    },
  ];

  it('leaves the endpoint as recording them one by one did, and reports the same changes', () => {
    const next = random(50);
    for (const start of starts)
      for (let run = 0; run < 300; run++) {
        const failed = Array.from({ length: 1 + Math.floor(next() * 12) }, () => next() < 0.6);
        const want = oneByOne(start, failed);
        const got = afterOutcomes(healthOf(start), failed, settings);
        expect(comparable(applied(start, got.after)), JSON.stringify({ start, failed })).toEqual(comparable(want.row));
        expect(got.effects.map((e) => ({ closed: e.closed, opened: e.opened?.waitMs ?? null }))).toEqual(want.effects);
        expect(got.after).toMatchObject({
          succeeded: failed.includes(false),
          failed: failed.includes(true),
          failedLast: failed.at(-1),
        });
      }
  });

  it('opens once on the fifth failure in a row and counts the failures after it without opening again', () => {
    const got = afterOutcomes(healthOf(starts[1]!), [true, true, true], settings);
    expect(got.effects.map((e) => e.opened?.trips ?? null)).toEqual([1, null, null]);
    expect(got.after).toMatchObject({ failures: 7, opened: 3, probeMs: 1000, trips: 1 });
  });

  it('a failed probe opens it again for longer; a success after it closes it', () => {
    const got = afterOutcomes(healthOf(starts[3]!), [true, false], settings);
    expect(got.effects).toEqual([
      { closed: false, opened: { opens: true, waitMs: 4000, trips: 3 } },
      { closed: true, opened: null },
    ]);
    expect(got.after).toMatchObject({ failures: 0, trips: 0, opened: 1, probeMs: -1, mask: '0', attempts: 0 });
  });
});
