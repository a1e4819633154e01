// Cheapest insertion, priority tier by tier: repeatedly insert the (target, route, position) with
// the smallest extra distance among feasible ones; or, with `regret`, the target whose best route
// beats its second best by most (regret-2). Each target caches its best position per route;
// inserting into a route only adds two edges there, and only delays / tightens times, so an old
// position can turn infeasible but never feasible: a cache entry is re-scanned only when its edge
// was split or went infeasible. That keeps 2,000 candidates affordable.
import type { Problem } from './problem.js';
import type { Route } from './schedule.js';

/** Inserts what fits into `routes` (the search's start); returns the nodes that fit nowhere, in
 *  node order. */
export function insertCheapest(p: Problem, routes: Route[], candidates: readonly number[], regret = false): number[] {
  const tiers = new Map<number, number[]>();
  for (const k of [...candidates].sort((a, b) => a - b)) {
    const prio = p.priority[k]!;
    const tier = tiers.get(prio);
    if (tier) tier.push(k);
    else tiers.set(prio, [k]);
  }
  const left: number[] = [];
  for (const prio of [...tiers.keys()].sort((a, b) => b - a))
    left.push(...insertTier(routes, tiers.get(prio)!, regret));
  return left.sort((a, b) => a - b);
}

function bestIn(route: Route, k: number): [cost: number, pos: number] {
  let best = Infinity;
  let bestPos = -1;
  if (route.full) return [best, bestPos];
  for (let pos = 0; pos <= route.length; pos++) {
    const c = route.insertionCost(k, pos, best);
    if (c < best) {
      best = c;
      bestPos = pos;
    }
  }
  return [best, bestPos];
}

function insertTier(routes: Route[], tier: readonly number[], regret: boolean): number[] {
  const m = tier.length;
  const r = routes.length;
  const cost = new Float64Array(m * r);
  const pos = new Int32Array(m * r);
  const active = new Uint8Array(m).fill(1);
  for (let c = 0; c < m; c++) {
    for (let j = 0; j < r; j++) [cost[c * r + j], pos[c * r + j]] = bestIn(routes[j]!, tier[c]!);
  }
  for (;;) {
    // Regret-2: the target that loses most if it does not get its best route now (one with a
    // single route left first), ties to the cheaper. Idle vehicles are alike: only one counts.
    const firstIdle = routes.findIndex((route) => route.length === 0);
    let bestRegret = -1;
    let best = Infinity;
    let bc = -1;
    let br = -1;
    for (let c = 0; c < m; c++) {
      if (!active[c]) continue;
      let first = Infinity;
      let second = Infinity;
      let at = -1;
      for (let j = 0; j < r; j++) {
        if (j !== firstIdle && routes[j]!.length === 0) continue;
        const x = cost[c * r + j]!;
        if (x < first) {
          second = first;
          first = x;
          at = j;
        } else if (x < second) second = x;
      }
      if (at < 0) continue;
      const loss = regret ? second - first : 0;
      if (loss > bestRegret || (loss === bestRegret && first < best)) {
        bestRegret = loss;
        best = first;
        bc = c;
        br = at;
      }
    }
    if (bc < 0) break;
    const route = routes[br]!;
    const q = pos[bc * r + br]!;
    route.insert(tier[bc]!, q);
    active[bc] = 0;
    for (let c = 0; c < m; c++) {
      if (!active[c]) continue;
      const e = c * r + br;
      const k = tier[c]!;
      if (route.full) {
        cost[e] = Infinity;
        continue;
      }
      let bestCost = Infinity;
      let bestPos = -1;
      if (cost[e] !== Infinity) {
        const old = pos[e]!;
        if (old === q) {
          [cost[e], pos[e]] = bestIn(route, k);
          continue;
        }
        const moved = old > q ? old + 1 : old;
        bestCost = route.insertionCost(k, moved);
        if (bestCost === Infinity) {
          [cost[e], pos[e]] = bestIn(route, k);
          continue;
        }
        bestPos = moved;
      }
      // The two edges created by the insertion; ties go to the lower position, as in bestIn.
      const left = route.insertionCost(k, q);
      if (left < bestCost || (left === bestCost && left !== Infinity && q < bestPos)) {
        bestCost = left;
        bestPos = q;
      }
      const right = route.insertionCost(k, q + 1);
      if (right < bestCost || (right === bestCost && right !== Infinity && q + 1 < bestPos)) {
        bestCost = right;
        bestPos = q + 1;
      }
      cost[e] = bestCost;
      pos[e] = bestPos;
    }
  }
  const left: number[] = [];
  for (let c = 0; c < m; c++) if (active[c]) left.push(tier[c]!);
  return left;
}
