import { describe, expect, it } from 'vitest';
import { RouteInputError } from '../../../src/routing/errors.js';
import { earthRadiusKm, haversineKm } from '../../../src/routing/geo.js';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import type { RouteSuggestionInput, RouteTarget } from '../../../src/routing/types.js';
import { checkResult, depot, mulberry32, placedCount, randomDraft } from './helpers.js';

/** The point `km` from the depot at `bearingDeg` (spherical destination formula). */
function destination(bearingDeg: number, km: number): { lat: number; lon: number } {
  const rad = Math.PI / 180;
  const d = km / earthRadiusKm;
  const b = bearingDeg * rad;
  const lat1 = depot.lat * rad;
  const lat2 = Math.asin(Math.sin(lat1) * Math.cos(d) + Math.cos(lat1) * Math.sin(d) * Math.cos(b));
  const lon2 =
    depot.lon * rad +
    Math.atan2(Math.sin(b) * Math.sin(d) * Math.cos(lat1), Math.cos(d) - Math.sin(lat1) * Math.sin(lat2));
  return { lat: lat2 / rad, lon: lon2 / rad };
}

const target = (
  externalId: string,
  at: { lat: number; lon: number } | null,
  extra: Partial<RouteTarget> = {},
): RouteTarget => ({
  externalId,
  lat: at?.lat ?? null,
  lon: at?.lon ?? null,
  serviceMinutes: 10,
  timeWindows: [],
  ...extra,
});

const draft = (targets: RouteTarget[], extra: Partial<RouteSuggestionInput> = {}): RouteSuggestionInput => ({
  depot,
  date: '2025-06-02',
  vehicles: 1,
  shift: { start: '08:00', end: '18:00' },
  targets,
  ...extra,
});

describe('suggestRoutes', () => {
  it.each([8, 12, 24])('drives a circle of %i points around the depot in circular order', (m) => {
    const radius = 5;
    // Shuffled input order, so the order found is the heuristic's, not the input's.
    const order = Array.from({ length: m }, (_, i) => (i * 5 + 3) % m);
    const input = draft(
      order.map((i) => target(`P${i}`, destination((360 * i) / m, radius))),
      { shift: { start: '06:00', end: '22:00' } },
    );
    const result = suggestRoutes(input);
    const km = checkResult(input, result);
    const stops = result.routes[0]!.stops.map((s) => Number(s.externalId.slice(1)));
    expect(stops).toHaveLength(m);
    const step = (stops[1]! - stops[0]! + m) % m;
    expect([1, m - 1]).toContain(step);
    stops.forEach((s, i) => i > 0 && expect((s - stops[i - 1]! + m) % m).toBe(step));
    // Optimum: every edge between two of the points is at least a side, so m - 1 sides + 2 radii.
    const side = haversineKm(
      destination(0, radius).lat,
      destination(0, radius).lon,
      destination(360 / m, radius).lat,
      destination(360 / m, radius).lon,
    );
    const optimum = (m - 1) * side + 2 * radius;
    expect(Math.abs(km - optimum) / optimum).toBeLessThan(1e-6);
    expect(result.totalDistanceKm).toBe(Math.round(optimum * 1000) / 1000);
  });

  it('honours time windows over distance, waiting when early', () => {
    const near = destination(90, 2);
    const far = destination(270, 15);
    const input = draft([
      target('near-late', near, { timeWindows: [{ start: '14:00', end: '15:00' }] }),
      target('far-early', far, { timeWindows: [{ start: '09:00', end: '10:00' }] }),
      target('anytime', destination(0, 3)),
    ]);
    const result = suggestRoutes(input);
    checkResult(input, result);
    const stops = result.routes[0]!.stops;
    expect(stops.map((s) => s.externalId).indexOf('far-early')).toBeLessThan(
      stops.map((s) => s.externalId).indexOf('near-late'),
    );
    const late = stops.find((s) => s.externalId === 'near-late')!;
    expect(late.arrival).toBe('14:00');
    expect(late.departure).toBe('14:10');
    expect(late.waitMinutes).toBeGreaterThan(0);
    expect(result.unplaced).toEqual([]);
  });

  it('keeps every visit inside its windows and the shift on random drafts', () => {
    for (const seed of [1, 2, 3, 4]) {
      const input = randomDraft(seed, 120, { vehicles: 4, windowShare: 0.5, shift: { start: '08:00', end: '14:00' } });
      const result = suggestRoutes(input);
      checkResult(input, result);
      expect(placedCount(result)).toBeGreaterThan(60);
    }
  });

  it('stays feasible on mixed drafts: end depot, several windows, stop limit, priorities, no coordinates', () => {
    for (const seed of [21, 22, 23, 24, 25, 26]) {
      const rnd = mulberry32(seed);
      const base = randomDraft(seed, 150, {
        vehicles: 1 + Math.floor(rnd() * 6),
        windowShare: 0.5,
        halfKm: 5 + rnd() * 20,
      });
      const input: RouteSuggestionInput = {
        ...base,
        endDepot: destination(rnd() * 360, rnd() * 10),
        maxStopsPerRoute: rnd() < 0.5 ? 10 + Math.floor(rnd() * 30) : undefined,
        averageSpeedKmh: 20 + rnd() * 40,
        shift: { start: '07:30', end: rnd() < 0.5 ? '16:00' : '19:45' },
        targets: base.targets.map((t, i) => ({
          ...t,
          lat: i % 37 === 0 ? null : t.lat,
          priority: Math.floor(rnd() * 3),
          timeWindows:
            rnd() < 0.2
              ? [{ start: '08:00', end: '09:30' }, { start: '13:00', end: '15:00' }, ...t.timeWindows]
              : t.timeWindows,
        })),
      };
      const result = suggestRoutes(input);
      checkResult(input, result);
      expect(result.unplaced.filter((u) => u.reason === 'NoCoordinates')).toHaveLength(5);
    }
  });

  it('accepts several windows per target and uses the one that fits', () => {
    const input = draft(
      [
        target('first', destination(0, 5), {
          timeWindows: [
            { start: '08:00', end: '08:05' },
            { start: '12:00', end: '13:00' },
          ],
        }),
        target('blocker', destination(10, 5), { serviceMinutes: 60, timeWindows: [{ start: '08:00', end: '10:00' }] }),
      ],
      { endDepot: destination(180, 3) },
    );
    const result = suggestRoutes(input);
    checkResult(input, result);
    expect(result.routes[0]!.stops.find((s) => s.externalId === 'first')!.arrival).toBe('12:00');
  });

  it('reports unplaceable targets with the reason', () => {
    const input = draft([
      target('no-coordinates', null),
      target('window-before-shift', destination(0, 2), { timeWindows: [{ start: '05:00', end: '07:30' }] }),
      target('window-too-short', destination(0, 2), {
        serviceMinutes: 45,
        timeWindows: [{ start: '10:00', end: '10:30' }],
      }),
      target('longer-than-shift', destination(0, 2), { serviceMinutes: 11 * 60 }),
      target('ok', destination(90, 2)),
    ]);
    const result = suggestRoutes(input);
    checkResult(input, result);
    expect(result.unplaced).toEqual([
      { externalId: 'no-coordinates', reason: 'NoCoordinates' },
      { externalId: 'window-before-shift', reason: 'OutsideTimeWindows' },
      { externalId: 'window-too-short', reason: 'OutsideTimeWindows' },
      { externalId: 'longer-than-shift', reason: 'OverCapacity' },
    ]);
    expect(result.routes[0]!.stops.map((s) => s.externalId)).toEqual(['ok']);
  });

  it('reports OverCapacity when the shift is too short for everything', () => {
    const input = draft(
      Array.from({ length: 10 }, (_, i) => target(`T${i}`, destination(i * 36, 1), { serviceMinutes: 20 })),
      { shift: { start: '08:00', end: '10:00' } },
    );
    const result = suggestRoutes(input);
    checkResult(input, result);
    // 2 h: five 20-minute visits and ~7 minutes of driving fit, six visits alone take the whole shift.
    expect(placedCount(result)).toBe(5);
    expect(result.unplaced).toHaveLength(5);
    expect(new Set(result.unplaced.map((u) => u.reason))).toEqual(new Set(['OverCapacity']));
  });

  it('blames the windows when only the windows clash, and places the higher priority', () => {
    const window = [{ start: '09:00', end: '09:30' }];
    const input = draft([
      target('low', destination(0, 2), { serviceMinutes: 30, timeWindows: window }),
      target('high', destination(180, 2), { serviceMinutes: 30, timeWindows: window, priority: 5 }),
    ]);
    const result = suggestRoutes(input);
    checkResult(input, result);
    expect(result.routes[0]!.stops.map((s) => s.externalId)).toEqual(['high']);
    expect(result.unplaced).toEqual([{ externalId: 'low', reason: 'OutsideTimeWindows' }]);
  });

  it('respects maxStopsPerRoute', () => {
    const input = randomDraft(7, 30, { vehicles: 2, maxStopsPerRoute: 5 });
    const result = suggestRoutes(input);
    checkResult(input, result);
    expect(result.routes.map((r) => r.stops.length)).toEqual([5, 5]);
    expect(result.unplaced).toHaveLength(20);
    expect(result.unplaced.every((u) => u.reason === 'OverCapacity')).toBe(true);
  });

  it('splits the work among vehicles, each target once, all placed when they fit', () => {
    const input = randomDraft(11, 80, { vehicles: 5, shift: { start: '08:00', end: '12:00' } });
    const result = suggestRoutes(input);
    checkResult(input, result);
    expect(result.unplaced).toEqual([]);
    expect(result.routes.filter((r) => r.stops.length > 0).length).toBeGreaterThanOrEqual(3);
  });

  it('is deterministic: the same input gives byte-identical output', () => {
    const input = randomDraft(5, 150, { vehicles: 4, windowShare: 0.3 });
    const first = JSON.stringify(suggestRoutes(input));
    expect(JSON.stringify(suggestRoutes(structuredClone(input)))).toBe(first);
    expect(JSON.stringify(suggestRoutes(input))).toBe(first);
  });

  it('returns empty routes for no targets', () => {
    const result = suggestRoutes(draft([], { vehicles: 2 }));
    expect(result).toEqual({
      routes: [1, 2].map((vehicle) => ({
        vehicle,
        stops: [],
        distanceKm: 0,
        durationMinutes: 0,
        start: '08:00',
        end: '08:00',
      })),
      unplaced: [],
      totalDistanceKm: 0,
      totalDurationMinutes: 0,
    });
  });

  it.each<[string, Partial<RouteSuggestionInput>]>([
    ['vehicles', { vehicles: 0 }],
    ['vehicles', { vehicles: 51 }],
    ['shift.start', { shift: { start: '8:00', end: '18:00' } }],
    ['shift.end', { shift: { start: '08:00', end: '07:00' } }],
    ['date', { date: '02.06.2025' }],
    ['maxStopsPerRoute', { maxStopsPerRoute: 0 }],
    ['averageSpeedKmh', { averageSpeedKmh: -1 }],
  ])('rejects a bad %s with RouteInputError', (field, patch) => {
    expect(() => suggestRoutes(draft([target('a', destination(0, 1))], patch))).toThrow(RouteInputError);
    expect(() => suggestRoutes(draft([target('a', destination(0, 1))], patch))).toThrow(field);
  });

  it('rejects duplicate externalIds and windows that cross midnight', () => {
    expect(() => suggestRoutes(draft([target('a', destination(0, 1)), target('a', destination(90, 1))]))).toThrow(
      /targets\[1\]\.externalId/,
    );
    expect(() =>
      suggestRoutes(draft([target('a', destination(0, 1), { timeWindows: [{ start: '22:00', end: '02:00' }] })])),
    ).toThrow(RouteInputError);
  });
});
