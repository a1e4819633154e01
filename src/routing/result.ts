// Turns routes of node numbers into the output shape; also names why a leftover target was left.
import type { Problem } from './problem.js';
import { earliestStart, type Route } from './schedule.js';
import { formatClock } from './time.js';
import type { RouteSuggestionInput, RouteSuggestionResult, SuggestedRoute, UnplacedReason } from './types.js';

const round3 = (km: number): number => Math.round(km * 1000) / 1000;

/** OutsideTimeWindows when some route could take the target if it could come at any time of the
 *  shift (its windows are what block it); OverCapacity when routes are full or too long anyway. */
export function leftoverReason(p: Problem, routes: readonly Route[], k: number): UnplacedReason {
  if (!p.hasWindows[k]) return 'OverCapacity';
  const latestStart = p.shiftEnd - p.service[k]!;
  for (const route of routes) {
    if (route.full) continue;
    for (let pos = 0; pos <= route.length; pos++) {
      const arrive = (pos > 0 ? route.dep[pos - 1]! : p.shiftStart) + route.d(route.node(pos - 1), k) * p.minutesPerKm;
      if (arrive > latestStart) continue;
      if (arrive + p.service[k]! + route.d(k, route.node(pos)) * p.minutesPerKm <= route.late[pos]!) {
        return 'OutsideTimeWindows';
      }
    }
  }
  return 'OverCapacity';
}

function describeRoute(p: Problem, input: RouteSuggestionInput, route: Route, vehicle: number): SuggestedRoute {
  const start = formatClock(p.shiftStart);
  if (route.length === 0) return { vehicle, stops: [], distanceKm: 0, durationMinutes: 0, start, end: start };
  let t = p.shiftStart;
  let prev = 0;
  let km = 0;
  const stops = route.seq.map((k, i) => {
    const leg = route.d(prev, k);
    const arrive = t + leg * p.minutesPerKm;
    const begin = earliestStart(p, k, arrive);
    t = begin + p.service[k]!;
    km += leg;
    prev = k;
    const target = input.targets[p.inputIndex[k]!]!;
    return {
      sequence: i + 1,
      externalId: target.externalId,
      lat: p.lat[k]!,
      lon: p.lon[k]!,
      arrival: formatClock(begin),
      departure: formatClock(t),
      waitMinutes: Math.round(begin - arrive),
      legDistanceKm: round3(leg),
    };
  });
  const back = route.d(prev, p.end);
  const end = t + back * p.minutesPerKm;
  return {
    vehicle,
    stops,
    distanceKm: round3(km + back),
    durationMinutes: Math.round(end - p.shiftStart),
    start,
    end: formatClock(end),
  };
}

export function buildResult(
  p: Problem,
  input: RouteSuggestionInput,
  routes: readonly Route[],
  leftovers: readonly number[],
): RouteSuggestionResult {
  const reasons = new Map(p.rejected);
  for (const k of leftovers) reasons.set(p.inputIndex[k]!, leftoverReason(p, routes, k));
  const described = routes.map((r, i) => describeRoute(p, input, r, i + 1));
  let km = 0;
  for (const r of routes) if (r.length > 0) km += r.distanceKm;
  return {
    routes: described,
    unplaced: [...reasons.keys()]
      .sort((a, b) => a - b)
      .map((index) => ({ externalId: input.targets[index]!.externalId, reason: reasons.get(index)! })),
    totalDistanceKm: round3(km),
    totalDurationMinutes: described.reduce((sum, r) => sum + r.durationMinutes, 0),
  };
}
