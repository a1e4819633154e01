// The Smart Route Suggestion heuristic. Pure and synchronous: run it through
// runRouteSuggestionInWorker (run-in-worker.ts) when the caller must not block its event loop.
import { improveRoute, relocateBetween, type Budget } from './improve.js';
import { insertCheapest } from './insertion.js';
import { buildProblem } from './problem.js';
import { buildResult } from './result.js';
import { Route } from './schedule.js';
import { sweepClusters } from './sweep.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from './types.js';

/** Local-search evaluations per draft: a few seconds at most for 2,000 targets, and a count, not a
 *  clock, so the same input gives the same routes on any machine. */
const evaluationBudget = 60_000_000;
/** Rounds of (re-insert leftovers, move stops between routes, re-optimise). */
const repairRounds = 4;

export function suggestRoutes(input: RouteSuggestionInput): RouteSuggestionResult {
  const p = buildProblem(input);
  const budget: Budget = { left: evaluationBudget };
  // Each route's share of the budget follows its size, so one huge route cannot starve the rest.
  const perRoute = (r: Route): number => Math.max(200_000, Math.floor((evaluationBudget / 2) * (r.length / Math.max(1, p.n))));
  const improve = (routes: Iterable<Route>): void => {
    for (const r of routes) {
      const share = { left: Math.min(budget.left, perRoute(r)) };
      const granted = share.left;
      improveRoute(r, share);
      budget.left -= granted - share.left;
    }
  };

  // (1) Filtering happened in buildProblem. (2) Sweep clusters, (3) one route built per cluster.
  const routes: Route[] = [];
  let leftovers: number[] = [];
  for (const cluster of sweepClusters(p)) {
    const route = new Route(p);
    leftovers.push(...insertCheapest(p, [route], cluster));
    routes.push(route);
  }
  // (4) Improve each route.
  improve(routes);
  // (5) Leftovers may fit another cluster's route; stops near a sector edge may belong to the
  // neighbour's route. Repeat while that changes anything.
  for (let round = 0; round < repairRounds && budget.left > 0; round++) {
    const before = leftovers.length;
    const changed = new Set<Route>();
    const lengths = routes.map((r) => r.length);
    leftovers = insertCheapest(p, routes, leftovers);
    routes.forEach((r, i) => r.length !== lengths[i] && changed.add(r));
    for (const r of relocateBetween(routes, budget)) changed.add(r);
    improve(changed);
    if (leftovers.length === before && changed.size === 0) break;
  }
  return buildResult(p, input, routes, leftovers);
}
