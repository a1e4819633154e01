// Property test: every draft of many random days is feasible by a checker written apart from the
// engine (independent-check.ts). A seeded PRNG loop (fast-check is not a dependency): the same
// days every run, each seed printed in the failure message.
import { describe, expect, it } from 'vitest';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import type { RouteSuggestionInput, RouteTarget } from '../../../src/routing/types.js';
import { mulberry32 } from '../../support/prng.js';
import { feasibilityViolations } from './independent-check.js';

const clock = (m: number): string =>
  `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

/** A random day: 1-90 targets, uniform or clustered, 0-3 windows each, any mix of the options. */
function randomDay(seed: number): RouteSuggestionInput {
  const rnd = mulberry32(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
  const depot = { lat: 48.1 + rnd() * 0.1, lon: 11.5 + rnd() * 0.1 };
  const spreadKm = 3 + rnd() * 30;
  const centres = Array.from(
    { length: int(1, 5) },
    () => [(rnd() - 0.5) * spreadKm, (rnd() - 0.5) * spreadKm] as const,
  );
  const clustered = rnd() < 0.4;
  const shiftStart = int(6, 9) * 60;
  const shiftEnd = Math.min(24 * 60, shiftStart + int(3, 12) * 60);
  const windowShare = rnd();
  const targets: RouteTarget[] = Array.from({ length: int(1, 90) }, (_, i) => {
    const [cx, cy] = clustered ? centres[int(0, centres.length - 1)]! : [0, 0];
    const spread = clustered ? 2 : spreadKm;
    const timeWindows =
      rnd() < windowShare
        ? Array.from({ length: int(1, 3) }, () => {
            const start = int(shiftStart - 60, shiftEnd);
            return { start: clock(Math.max(0, start)), end: clock(Math.min(24 * 60, start + int(15, 240))) };
          })
        : [];
    return {
      externalId: `T${i}`,
      lat: rnd() < 0.03 ? null : depot.lat + (cy + (rnd() - 0.5) * spread) / 111.2,
      lon: depot.lon + (cx + (rnd() - 0.5) * spread) / 75,
      serviceMinutes: int(0, 40),
      timeWindows,
      ...(rnd() < 0.3 ? { priority: int(0, 3) } : {}),
    };
  });
  return {
    depot,
    ...(rnd() < 0.3
      ? { endDepot: { lat: depot.lat + (rnd() - 0.5) * 0.1, lon: depot.lon + (rnd() - 0.5) * 0.1 } }
      : {}),
    date: '2025-06-02',
    vehicles: int(1, 6),
    shift: { start: clock(shiftStart), end: clock(shiftEnd) },
    ...(rnd() < 0.3 ? { maxStopsPerRoute: int(1, 20) } : {}),
    ...(rnd() < 0.3 ? { averageSpeedKmh: 15 + rnd() * 50 } : {}),
    targets,
  };
}

describe('every draft is feasible (independent check, random days)', () => {
  it('finds no broken rule on 40 random days', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const input = randomDay(seed);
      const result = suggestRoutes(input);
      expect(feasibilityViolations(input, result), `seed ${seed}`).toEqual([]);
    }
  });

  it('the checker does find broken rules: a stop moved past its window, a limit, a shift end', () => {
    const input: RouteSuggestionInput = {
      depot: { lat: 48.137, lon: 11.575 },
      date: '2025-06-02',
      vehicles: 1,
      shift: { start: '08:00', end: '12:00' },
      maxStopsPerRoute: 3,
      targets: [
        {
          externalId: 'early',
          lat: 48.15,
          lon: 11.6,
          serviceMinutes: 10,
          timeWindows: [{ start: '08:00', end: '09:00' }],
        },
        {
          externalId: 'late',
          lat: 48.12,
          lon: 11.55,
          serviceMinutes: 10,
          timeWindows: [{ start: '10:00', end: '11:00' }],
        },
        { externalId: 'any', lat: 48.14, lon: 11.58, serviceMinutes: 10, timeWindows: [] },
      ],
    };
    const result = suggestRoutes(input);
    expect(feasibilityViolations(input, result)).toEqual([]);
    const route = result.routes[0]!;
    const reversed = { ...result, routes: [{ ...route, stops: [...route.stops].reverse() }] };
    expect(feasibilityViolations(input, reversed).join('\n')).toMatch(/fits none of its windows/);
    const lifted = { ...input, maxStopsPerRoute: 2 };
    expect(feasibilityViolations(lifted, result).join('\n')).toMatch(/3 stops, limit 2/);
    const shorter = { ...input, shift: { start: '08:00', end: '10:05' } };
    expect(feasibilityViolations(shorter, result).join('\n')).toMatch(/late reached at .* fits none of its windows/);
  });
});
