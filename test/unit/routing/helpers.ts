// Shared by the routing tests: a seeded PRNG, random drafts, and an independent re-check of a
// result's timing against the input (recomputed from coordinates, not read from the output).
import { expect } from 'vitest';
import { haversineKm } from '../../../src/routing/geo.js';
import type { ImportedDraftInput, ImportedTarget } from '../../../src/routing/imported-draft.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from '../../../src/routing/types.js';
import { mulberry32 } from '../../support/prng.js';

export { mulberry32 };

export const minutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
export const clock = (m: number): string =>
  `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

export const depot = { lat: 48.137, lon: 11.575 };

/** Targets in a box of ±`halfKm` around the depot; `windowShare` of them get one window. */
export function randomDraft(
  seed: number,
  n: number,
  options: Partial<RouteSuggestionInput> & { halfKm?: number; windowShare?: number } = {},
): RouteSuggestionInput {
  const { halfKm = 10, windowShare = 0, ...rest } = options;
  const rnd = mulberry32(seed);
  const dLat = halfKm / 111.2;
  const dLon = halfKm / (111.2 * Math.cos((depot.lat * Math.PI) / 180));
  return {
    depot,
    date: '2025-06-02',
    vehicles: 3,
    shift: { start: '08:00', end: '18:00' },
    targets: Array.from({ length: n }, (_, i) => {
      const lat = depot.lat + (rnd() * 2 - 1) * dLat;
      const lon = depot.lon + (rnd() * 2 - 1) * dLon;
      const serviceMinutes = 5 + Math.floor(rnd() * 11);
      const start = 8 * 60 + 30 * Math.floor(rnd() * 14);
      const windowed = rnd() < windowShare;
      return {
        externalId: `T${i}`,
        lat,
        lon,
        serviceMinutes,
        timeWindows: windowed ? [{ start: clock(start), end: clock(Math.min(18 * 60, start + 180)) }] : [],
      };
    }),
    ...rest,
  };
}

/** Re-simulates every route from the input: each visit inside one window, return by shift end,
 *  displayed times and distances consistent, each target at most once. Returns the km recomputed. */
export function checkResult(input: RouteSuggestionInput, result: RouteSuggestionResult): number {
  const eps = 1e-6;
  const byId = new Map(input.targets.map((t) => [t.externalId, t]));
  const seen = new Set<string>();
  const shiftStart = minutes(input.shift.start);
  const shiftEnd = minutes(input.shift.end);
  const perMinute = (input.averageSpeedKmh ?? 40) / 60;
  const end = input.endDepot ?? input.depot;
  let totalKm = 0;
  expect(result.routes.map((r) => r.vehicle)).toEqual(Array.from({ length: input.vehicles }, (_, i) => i + 1));
  for (const route of result.routes) {
    if (input.maxStopsPerRoute !== undefined) expect(route.stops.length).toBeLessThanOrEqual(input.maxStopsPerRoute);
    let t = shiftStart;
    let at = input.depot;
    let km = 0;
    route.stops.forEach((stop, i) => {
      expect(stop.sequence).toBe(i + 1);
      expect(seen.has(stop.externalId)).toBe(false);
      seen.add(stop.externalId);
      const target = byId.get(stop.externalId)!;
      expect([stop.lat, stop.lon]).toEqual([target.lat, target.lon]);
      const leg = haversineKm(at.lat, at.lon, stop.lat, stop.lon);
      km += leg;
      expect(stop.legDistanceKm).toBeCloseTo(leg, 3);
      const drivenIn = t + leg / perMinute;
      const windows =
        target.timeWindows.length > 0
          ? target.timeWindows.map((w) => [minutes(w.start), minutes(w.end)] as const)
          : [[shiftStart, shiftEnd] as const];
      // The earliest start whose whole visit fits a window, as the engine promises.
      let begin = Infinity;
      for (const [ws, we] of windows) {
        const s = Math.max(drivenIn, ws, shiftStart);
        if (s + target.serviceMinutes <= Math.min(we, shiftEnd) + eps) begin = Math.min(begin, s);
      }
      expect(begin).toBeLessThan(Infinity);
      expect(Math.abs(minutes(stop.arrival) - begin)).toBeLessThanOrEqual(0.5 + eps);
      t = begin + target.serviceMinutes;
      expect(Math.abs(minutes(stop.departure) - t)).toBeLessThanOrEqual(0.5 + eps);
      expect(Math.abs(stop.waitMinutes - (begin - drivenIn))).toBeLessThanOrEqual(0.5 + eps);
      // The displayed (rounded) times stay inside a window too.
      expect(windows.some(([ws, we]) => minutes(stop.arrival) >= ws && minutes(stop.departure) <= we)).toBe(true);
      at = { lat: stop.lat, lon: stop.lon };
    });
    if (route.stops.length === 0) {
      expect(route.distanceKm).toBe(0);
      continue;
    }
    const back = haversineKm(at.lat, at.lon, end.lat, end.lon);
    km += back;
    t += back / perMinute;
    expect(t).toBeLessThanOrEqual(shiftEnd + eps);
    expect(Math.abs(minutes(route.end) - t)).toBeLessThanOrEqual(0.5 + eps);
    expect(route.start).toBe(input.shift.start);
    expect(Math.abs(route.durationMinutes - (t - shiftStart))).toBeLessThanOrEqual(0.5 + eps);
    expect(route.distanceKm).toBeCloseTo(km, 3);
    totalKm += km;
  }
  expect(result.totalDistanceKm).toBeCloseTo(totalKm, 3);
  for (const u of result.unplaced) {
    expect(seen.has(u.externalId)).toBe(false);
    seen.add(u.externalId);
  }
  expect(seen.size).toBe(input.targets.length);
  return totalKm;
}

export const placedCount = (r: RouteSuggestionResult): number =>
  r.routes.reduce((sum, route) => sum + route.stops.length, 0);

/** The draft as an import job's targets would give it: windows as UTC instants ('24:00' is the
 *  next day's midnight), converted back to the same clock windows in time zone UTC. */
export function asImported(input: RouteSuggestionInput): ImportedDraftInput {
  const { targets, ...plan } = input;
  const instant = (clock: string): string =>
    new Date(Date.parse(`${input.date}T00:00:00Z`) + minutes(clock) * 60_000).toISOString();
  const imported: ImportedTarget[] = targets.map((t) => ({
    externalId: t.externalId,
    lat: t.lat,
    lon: t.lon,
    serviceMinutes: t.serviceMinutes,
    priority: t.priority ?? null,
    timeWindows: t.timeWindows.map((w) => ({ start: instant(w.start), end: instant(w.end) })),
  }));
  return { ...plan, timeZone: 'UTC', targetsJson: JSON.stringify(imported) };
}
