// Benchmark baseline: what a dispatcher does by hand. Vehicle after vehicle, drive to the nearest
// unvisited target that can still be served (window, shift end, stop limit), until none can.
// Same filtering, timing rules and output shape as suggestRoutes, so distances compare.
import { buildProblem, type Problem } from './problem.js';
import { buildResult } from './result.js';
import { Route, earliestStart, timeEpsilon } from './schedule.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from './types.js';

export function nearestNeighbourRoutes(input: RouteSuggestionInput): RouteSuggestionResult {
  const p = buildProblem(input);
  const { routes, leftovers } = nearestNeighbourTours(p);
  return buildResult(p, input, routes, leftovers);
}

/** The baseline's routes. */
export function nearestNeighbourTours(p: Problem): { routes: Route[]; leftovers: number[] } {
  const visited = new Uint8Array(p.size);
  const routes: Route[] = [];
  for (let v = 0; v < p.vehicles; v++) {
    const route = new Route(p);
    let at = 0;
    let t = p.shiftStart;
    while (route.length < p.maxStops) {
      let next = -1;
      let nextKm = Infinity;
      let nextDeparture = 0;
      for (let k = 1; k <= p.n; k++) {
        const km = route.d(at, k);
        if (visited[k] || km >= nextKm) continue;
        const departure = earliestStart(p, k, t + km * p.minutesPerKm) + p.service[k]!;
        if (departure + route.d(k, p.end) * p.minutesPerKm > p.shiftEnd + timeEpsilon) continue;
        next = k;
        nextKm = km;
        nextDeparture = departure;
      }
      if (next < 0) break;
      visited[next] = 1;
      route.seq.push(next);
      at = next;
      t = nextDeparture;
    }
    route.refresh();
    routes.push(route);
  }
  const leftovers: number[] = [];
  for (let k = 1; k <= p.n; k++) if (!visited[k]) leftovers.push(k);
  return { routes, leftovers };
}
