// A feasibility check of a route-suggestion result written apart from the engine (none of its
// code, not even its haversine): it replays each route from the input alone, in the documented
// model, and lists every broken rule. Empty list = feasible.
import type { RouteSuggestionInput, RouteSuggestionResult } from '../../../src/routing/types.js';

const radiusKm = 6371.0088;
const toRad = (deg: number): number => (deg * Math.PI) / 180;

function greatCircleKm(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const dPhi = toRad(b.lat - a.lat);
  const dLambda = toRad(b.lon - a.lon);
  const h = Math.sin(dPhi / 2) ** 2 + Math.cos(toRad(a.lat)) * Math.cos(toRad(b.lat)) * Math.sin(dLambda / 2) ** 2;
  return 2 * radiusKm * Math.atan2(Math.sqrt(h), Math.sqrt(1 - h));
}

const minutesOf = (hhmm: string): number => {
  const [h, m] = hhmm.split(':').map(Number);
  return h! * 60 + m!;
};

/** Rules: each target at most once, placed or unplaced but not both, all accounted for; stops at
 *  the input's coordinates; driving at the given speed (40 km/h by default); every visit wholly
 *  inside one of its windows and the shift, starting as early as that allows; back at the end
 *  depot by shift end; at most maxStopsPerRoute stops; reported km and times match the replay. */
export function feasibilityViolations(input: RouteSuggestionInput, result: RouteSuggestionResult): string[] {
  const broken: string[] = [];
  const kmPerMinute = (input.averageSpeedKmh ?? 40) / 60;
  const shiftStart = minutesOf(input.shift.start);
  const shiftEnd = minutesOf(input.shift.end);
  const endDepot = input.endDepot ?? input.depot;
  const byId = new Map(input.targets.map((t) => [t.externalId, t]));
  const seen = new Set<string>();
  const tolerance = 1e-6;
  let total = 0;
  if (result.routes.length !== input.vehicles)
    broken.push(`${result.routes.length} routes for ${input.vehicles} vehicles`);
  for (const route of result.routes) {
    const name = `vehicle ${route.vehicle}`;
    if (input.maxStopsPerRoute !== undefined && route.stops.length > input.maxStopsPerRoute) {
      broken.push(`${name}: ${route.stops.length} stops, limit ${input.maxStopsPerRoute}`);
    }
    let clock = shiftStart;
    let here = input.depot;
    let km = 0;
    for (const stop of route.stops) {
      const target = byId.get(stop.externalId);
      if (!target || target.lat === null || target.lon === null) {
        broken.push(`${name}: ${stop.externalId} is not a routable input target`);
        continue;
      }
      if (seen.has(stop.externalId)) broken.push(`${stop.externalId} visited twice`);
      seen.add(stop.externalId);
      const at = { lat: target.lat, lon: target.lon };
      if (stop.lat !== at.lat || stop.lon !== at.lon)
        broken.push(`${stop.externalId}: coordinates differ from the input`);
      const leg = greatCircleKm(here, at);
      km += leg;
      const driven = clock + leg / kmPerMinute;
      const windows =
        target.timeWindows.length > 0
          ? target.timeWindows.map((w) => [minutesOf(w.start), minutesOf(w.end)])
          : [[shiftStart, shiftEnd]];
      // The earliest start at which the whole visit fits one window and the shift.
      let start = Infinity;
      for (const [from, to] of windows) {
        const begin = Math.max(driven, from!, shiftStart);
        if (begin + target.serviceMinutes <= Math.min(to!, shiftEnd) + tolerance) start = Math.min(start, begin);
      }
      if (start === Infinity) {
        broken.push(`${name}: ${stop.externalId} reached at ${driven.toFixed(2)} min fits none of its windows`);
        start = driven;
      }
      clock = start + target.serviceMinutes;
      if (Math.abs(minutesOf(stop.arrival) - start) > 0.5 + tolerance)
        broken.push(`${stop.externalId}: arrival ${stop.arrival}, replay ${start.toFixed(2)}`);
      if (!windows.some(([from, to]) => minutesOf(stop.arrival) >= from! && minutesOf(stop.departure) <= to!)) {
        broken.push(`${stop.externalId}: shown visit ${stop.arrival}-${stop.departure} outside its windows`);
      }
      here = at;
    }
    if (route.stops.length === 0) continue;
    const back = greatCircleKm(here, endDepot);
    km += back;
    clock += back / kmPerMinute;
    if (clock > shiftEnd + tolerance) broken.push(`${name}: back at ${clock.toFixed(2)} min, shift ends ${shiftEnd}`);
    if (Math.abs(route.distanceKm - km) > 1e-3)
      broken.push(`${name}: ${route.distanceKm} km reported, ${km.toFixed(4)} replayed`);
    total += km;
  }
  if (Math.abs(result.totalDistanceKm - total) > 1e-3 * Math.max(1, result.routes.length)) {
    broken.push(`total ${result.totalDistanceKm} km reported, ${total.toFixed(4)} replayed`);
  }
  for (const u of result.unplaced) {
    if (seen.has(u.externalId)) broken.push(`${u.externalId} both placed and unplaced`);
    seen.add(u.externalId);
    if (!['NoCoordinates', 'OutsideTimeWindows', 'OverCapacity'].includes(u.reason))
      broken.push(`${u.externalId}: reason ${u.reason}`);
  }
  for (const t of input.targets)
    if (!seen.has(t.externalId)) broken.push(`${t.externalId} neither placed nor unplaced`);
  return broken;
}
