// The Smart Route Suggestion search. Pure and synchronous: run it through
// runRouteSuggestionInWorker (run-in-worker.ts, via imported-draft.ts) when the caller must not
// block its event loop.
import { improveRoute } from './improve.js';
import { insertCheapest } from './insertion.js';
import { nearestTargets } from './neighbours.js';
import { buildProblem } from './problem.js';
import { seededRandom } from './random.js';
import { buildResult } from './result.js';
import { RuinAndRecreate } from './ruin-recreate.js';
import { Route } from './schedule.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from './types.js';

/** Ruin-and-recreate evaluations per target: a count, not a clock, so the same input gives the
 *  same routes on any machine. */
const evaluationsPerTarget = Number(process.env.RR_EVALS ?? 60_000);
/** Nearest targets a ruin spreads over. */
const neighbourCount = 40;
/** Evaluations of the final per-route polish. */
const polishBudget = 2_000_000;

export type SearchOptions = {
  /** Multiplies the search budget (benchmarks: how far from converged the default stops). */
  effort?: number;
};

export function suggestRoutes(input: RouteSuggestionInput, options: SearchOptions = {}): RouteSuggestionResult {
  const p = buildProblem(input);
  const routes = Array.from({ length: p.vehicles }, () => new Route(p));
  const unplaced = insertCheapest(p, routes, Array.from({ length: p.n }, (_, i) => i + 1));
  for (const r of routes) improveRoute(r, { left: polishBudget });
  const search = new RuinAndRecreate(p, nearestTargets(p, neighbourCount), seededRandom(Number(process.env.RR_SEED ?? 1)));
  const best = search.run({ routes, unplaced }, evaluationsPerTarget * p.n * (options.effort ?? 1));
  const polish = { left: polishBudget };
  for (const r of best.routes) improveRoute(r, polish);
  return buildResult(p, input, best.routes, best.unplaced);
}
