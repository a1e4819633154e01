// The Smart Route Suggestion heuristic. Pure and synchronous: run it through
// runRouteSuggestionInWorker (run-in-worker.ts, via imported-draft.ts) when the caller must not
// block its event loop.
import { exchangeTails, improveRoute, relocateBetween, type Budget } from './improve.js';
import { insertCheapest } from './insertion.js';
import { nearestNeighbourTours } from './nearest-neighbour.js';
import { nearestTargets, type Neighbours } from './neighbours.js';
import { buildProblem, type Problem } from './problem.js';
import { buildResult } from './result.js';
import { Route } from './schedule.js';
import { sweepClusters } from './sweep.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from './types.js';

/** Local-search evaluations per start: a count, not a clock, so the same input gives the same
 *  routes on any machine. Drafts of 2,000 targets in city routes use under 4M; this cap only binds
 *  on routes of hundreds of stops, keeping each start to about half a second. */
const evaluationBudget = 10_000_000;
/** Rounds of (re-insert leftovers, move stops between routes, re-optimise). */
const repairRounds = 8;
/** Share of a shift a route is planned to be busy when sizing the fleet: the rest absorbs
 *  time windows and detours. */
const plannedUtilisation = 0.85;

/** Nearest targets a stop may be moved next to between routes. */
const neighbourCount = 16;

type Solution = { routes: Route[]; leftovers: number[] };

export function suggestRoutes(input: RouteSuggestionInput): RouteSuggestionResult {
  const p = buildProblem(input);
  const near = nearestTargets(p, neighbourCount);
  // Sectors for every vehicle first. When that leaves vehicles half idle, fewer, fuller routes
  // usually drive less (each route pays the trip out and back): retry with the number of routes
  // the measured workload needs, the spare vehicles only taking what fits nowhere else.
  let best = polish(p, near, sweepStart(p, p.vehicles, near));
  const needed = Math.ceil(busyMinutes(best) / ((p.shiftEnd - p.shiftStart) * plannedUtilisation));
  const starts = [needed, needed + 1].filter((count) => count >= 1 && count < p.vehicles).map((count) => () => sweepStart(p, count, near));
  // Sectors ignore time: with many windows a route may have to criss-cross its sector. A
  // nearest-neighbour start follows the clock instead; improved, it sometimes wins there.
  starts.push(() => nearestNeighbourTours(p));
  for (const start of starts) {
    const candidate = polish(p, near, start());
    if (better(p, candidate, best)) best = candidate;
  }
  return buildResult(p, input, best.routes, best.leftovers);
}

/** (2) Sweep into `sectors` clusters, (3) one route built per cluster; vehicles beyond `sectors`
 *  start empty. */
function sweepStart(p: Problem, sectors: number, near: Neighbours): Solution {
  const routes: Route[] = [];
  const leftovers: number[] = [];
  for (const cluster of sweepClusters(p, sectors, near)) {
    const route = new Route(p);
    leftovers.push(...insertCheapest(p, [route], cluster));
    routes.push(route);
  }
  while (routes.length < p.vehicles) routes.push(new Route(p));
  return { routes, leftovers };
}

/** (4) Improve each route, (5) place leftovers and move stops between routes, re-improving. */
function polish(p: Problem, near: Neighbours, start: Solution): Solution {
  const { routes } = start;
  let { leftovers } = start;
  const budget: Budget = { left: evaluationBudget };
  const perRoute = (r: Route): number => Math.max(200_000, Math.floor((evaluationBudget / 2) * (r.length / Math.max(1, p.n))));
  const improve = (changed: Iterable<Route>): void => {
    for (const r of changed) {
      const share = { left: Math.min(budget.left, perRoute(r)) };
      const granted = share.left;
      improveRoute(r, share);
      budget.left -= granted - share.left;
    }
  };
  improve(routes);
  // Leftovers may fit another route; stops near a sector edge may belong to the neighbour's
  // route. Repeat while that changes anything.
  for (let round = 0; round < repairRounds && budget.left > 0; round++) {
    const before = leftovers.length;
    const lengths = routes.map((r) => r.length);
    leftovers = insertCheapest(p, routes, leftovers);
    const changed = new Set(routes.filter((r, i) => r.length !== lengths[i]));
    for (const r of exchangeTails(routes, near, budget)) changed.add(r);
    for (const r of relocateBetween(routes, near, budget)) changed.add(r);
    improve(changed);
    if (leftovers.length === before && changed.size === 0) break;
  }
  return { routes, leftovers };
}

/** Driving and service time of a solution, without waiting. */
function busyMinutes({ routes }: Solution): number {
  let minutes = 0;
  for (const r of routes) {
    if (r.length === 0) continue;
    minutes += r.distanceKm * r.p.minutesPerKm;
    for (const k of r.seq) minutes += r.p.service[k]!;
  }
  return minutes;
}

/** More placed targets, tier by tier from the highest priority, then less distance. */
function better(p: Problem, a: Solution, b: Solution): boolean {
  const placed = (s: Solution): Map<number, number> => {
    const byTier = new Map<number, number>();
    for (const r of s.routes) for (const k of r.seq) byTier.set(p.priority[k]!, (byTier.get(p.priority[k]!) ?? 0) + 1);
    return byTier;
  };
  const pa = placed(a);
  const pb = placed(b);
  for (const tier of [...new Set([...pa.keys(), ...pb.keys()])].sort((x, y) => y - x)) {
    const diff = (pa.get(tier) ?? 0) - (pb.get(tier) ?? 0);
    if (diff !== 0) return diff > 0;
  }
  return totalKm(a) < totalKm(b);
}

const totalKm = (s: Solution): number => s.routes.reduce((sum, r) => sum + (r.length > 0 ? r.distanceKm : 0), 0);
