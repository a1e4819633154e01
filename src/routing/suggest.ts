// The Smart Route Suggestion search. Pure and synchronous: run it through
// runRouteSuggestionInWorker (run-in-worker.ts, via imported-draft.ts) when the caller must not
// block its event loop.
import { improveRoute, localSearch } from './improve.js';
import { insertCheapest } from './insertion.js';
import { nearestTargets } from './neighbours.js';
import { buildProblem } from './problem.js';
import { seededRandom } from './random.js';
import { buildResult } from './result.js';
import { RuinAndRecreate, type Solution } from './ruin-recreate.js';
import { Route } from './schedule.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from './types.js';

/** Ruin-and-recreate evaluations per target: a count, not a clock, so the same input gives the
 *  same routes on any machine (about 1 s of CPU for 200 targets here, 5 s for 1,000). */
const evaluationsPerTarget = 50_000;
/** Beyond this many targets the budget stops growing: the largest drafts (5,000) must stay well
 *  inside ROUTE_SUGGESTION_BUDGET_MS; they get fewer steps per target. */
const budgetTargetsCap = 1_000;
/** Targets inserted together when building the start. */
const constructionChunk = 500;
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
  // Highest priority first, in chunks: each insertion step looks at every candidate, so one
  // chunk of 5,000 would cost 25× ten chunks of 500; the search repairs the rougher start.
  const targets = Array.from({ length: p.n }, (_, i) => i + 1).sort((a, b) => p.priority[b]! - p.priority[a]! || a - b);
  const start = (regret: boolean): Solution => {
    const routes = Array.from({ length: p.vehicles }, () => new Route(p));
    const unplaced: number[] = [];
    for (let i = 0; i < targets.length; i += constructionChunk) {
      unplaced.push(...insertCheapest(p, routes, targets.slice(i, i + constructionChunk), regret));
    }
    unplaced.sort((a, b) => a - b);
    for (const r of routes) improveRoute(r, { left: polishBudget });
    return { routes, unplaced };
  };
  // More work than the shifts hold: start from regret insertion instead, which places first the
  // targets with few good options (measured: more placed, fewer km after the search).
  let first = start(false);
  if (first.unplaced.length > 0) first = start(true);
  const near = nearestTargets(p, neighbourCount);
  const search = new RuinAndRecreate(p, near, seededRandom(1));
  const best = search.run(first, evaluationsPerTarget * Math.min(p.n, budgetTargetsCap) * (options.effort ?? 1));
  const polish = { left: polishBudget };
  localSearch(best.routes, near, polish);
  return buildResult(p, input, best.routes, best.unplaced);
}
