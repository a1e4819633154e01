// Local search on distance, accepting only moves whose re-simulated timing stays feasible:
// 2-opt (reverse a span) and or-opt (move a chain of 1-3 stops, either way round) inside a route,
// and between routes cross-exchange (which includes relocation, swap and Or-opt of chains) and
// exchange of route tails (2-opt*), each only next to one of a stop's nearest targets.
// First improvement; budgets count evaluations, not wall-clock, so every machine gets the same.
import type { Neighbours } from './neighbours.js';
import { timeEpsilon, type Route } from './schedule.js';

/** A move must gain more than this (km) to count: stops float-noise cycles. */
const minGainKm = 1e-9;

export type Budget = { left: number };

/** Improves one route in place; true when anything changed. */
export function improveRoute(route: Route, budget: Budget): boolean {
  const scratch = new Int32Array(route.length);
  let changedAny = false;
  for (;;) {
    const changed = twoOpt(route, scratch, budget) || orOpt(route, scratch, budget);
    // Either pass may stop early on budget; the loop then ends here too.
    changedAny ||= changed;
    if (!changed || budget.left <= 0) return changedAny;
  }
}

function twoOpt(route: Route, scratch: Int32Array, budget: Budget): boolean {
  const len = route.length;
  const { seq, p } = route;
  const { dist, size } = p;
  let changed = false;
  for (let i = 0; i < len - 1; i++) {
    const a = route.node(i - 1);
    for (let j = i + 1; j < len; j++) {
      if (--budget.left <= 0) return changed;
      const si = seq[i]!;
      const sj = seq[j]!;
      const b = route.node(j + 1);
      const gain = dist[a * size + si]! + dist[sj * size + b]! - dist[a * size + sj]! - dist[si * size + b]!;
      if (gain <= minGainKm) continue;
      for (let x = 0; x <= j - i; x++) scratch[x] = seq[j - x]!;
      budget.left -= j - i;
      if (!route.spanFeasible(i, j + 1, scratch, j - i + 1)) continue;
      route.replaceSpan(i, scratch, j - i + 1);
      budget.left -= len; // the refresh
      changed = true;
    }
  }
  return changed;
}

function orOpt(route: Route, scratch: Int32Array, budget: Budget): boolean {
  const { seq, p } = route;
  const { dist, size, end } = p;
  const len = route.length;
  let changed = false;
  for (let segLen = 1; segLen <= 3; segLen++) {
    for (let i = 0; i + segLen <= len; i++) {
      const first = seq[i]!;
      const last = seq[i + segLen - 1]!;
      const a = route.node(i - 1);
      const b = route.node(i + segLen);
      const removeGain = route.d(a, first) + route.d(last, b) - route.d(a, b);
      if (removeGain <= minGainKm) continue;
      for (let j = 0; j <= len; j++) {
        if (j >= i && j <= i + segLen) continue;
        if (--budget.left <= 0) return changed;
        const c = j > 0 ? seq[j - 1]! : 0;
        const e = j < len ? seq[j]! : end;
        const forward = dist[c * size + first]! + dist[last * size + e]!;
        const backward = segLen > 1 ? dist[c * size + last]! + dist[first * size + e]! : Infinity;
        const reversed = backward < forward;
        if (removeGain - (reversed ? backward : forward) + dist[c * size + e]! <= minGainKm) continue;
        // The span from the insertion point to the far end of the chain, rebuilt in new order.
        let count = 0;
        const chain = (): void => {
          for (let x = 0; x < segLen; x++) scratch[count++] = seq[reversed ? i + segLen - 1 - x : i + x]!;
        };
        let from: number;
        let to: number;
        if (j < i) {
          chain();
          for (let x = j; x < i; x++) scratch[count++] = seq[x]!;
          from = j;
          to = i + segLen;
        } else {
          for (let x = i + segLen; x < j; x++) scratch[count++] = seq[x]!;
          chain();
          from = i;
          to = j;
        }
        budget.left -= count;
        if (!route.spanFeasible(from, to, scratch, count)) continue;
        route.replaceSpan(from, scratch, count);
        budget.left -= len;
        changed = true;
        break; // The chain moved: positions from i on changed meaning; go on with the next i.
      }
    }
  }
  return changed;
}

/** Where each stop is: route index and position (-1 when unrouted). */
function locator(routes: Route[]): { routeOf: Int32Array; posOf: Int32Array; locate: (r: number) => void } {
  const size = routes[0]?.p.size ?? 0;
  const routeOf = new Int32Array(size).fill(-1);
  const posOf = new Int32Array(size);
  const locate = (r: number): void => {
    routes[r]!.seq.forEach((k, i) => {
      routeOf[k] = r;
      posOf[k] = i;
    });
  };
  routes.forEach((_, r) => locate(r));
  return { routeOf, posOf, locate };
}

/** 2-opt*: route A keeps its stops up to k and continues with route B's stops from a near target
 *  nb on; B keeps its stops before nb and continues with A's after k. All routes share the end
 *  depot, so each tail keeps its latest-arrival bounds: feasibility is two comparisons. */
export function exchangeTails(routes: Route[], near: Neighbours, budget: Budget): Set<Route> {
  const touched = new Set<Route>();
  const { routeOf, posOf, locate } = locator(routes);
  for (let ra = 0; ra < routes.length; ra++) {
    const a = routes[ra]!;
    for (let i = 0; i < a.length; i++) {
      const k = a.seq[i]!;
      const afterK = a.node(i + 1);
      for (let x = 0; x < near.k; x++) {
        const nb = near.list[k * near.k + x]!;
        if (nb < 0) break;
        const rb = routeOf[nb]!;
        if (rb === ra || rb < 0) continue;
        if (--budget.left <= 0) return touched;
        const b = routes[rb]!;
        const j = posOf[nb]!;
        const beforeNb = b.node(j - 1);
        const gain = a.d(k, afterK) + a.d(beforeNb, nb) - a.d(k, nb) - a.d(beforeNb, afterK);
        if (gain <= minGainKm) continue;
        if (i + 1 + b.length - j > a.p.maxStops || j + a.length - i - 1 > a.p.maxStops) continue;
        const p = a.p;
        if (a.dep[i]! + a.d(k, nb) * p.minutesPerKm > b.late[j]! + timeEpsilon) continue;
        const bHeadDone = j > 0 ? b.dep[j - 1]! : p.shiftStart;
        if (bHeadDone + a.d(beforeNb, afterK) * p.minutesPerKm > a.late[i + 1]! + timeEpsilon) continue;
        const newA = [...a.seq.slice(0, i + 1), ...b.seq.slice(j)];
        const newB = [...b.seq.slice(0, j), ...a.seq.slice(i + 1)];
        a.replaceAll(newA);
        b.replaceAll(newB);
        budget.left -= newA.length + newB.length;
        locate(ra);
        locate(rb);
        touched.add(a).add(b);
        break; // k's successor changed: go on with the next stop.
      }
    }
  }
  return touched;
}

/** Longest segment a cross-exchange moves. */
const maxSegment = 3;

/** Cross-exchange (Taillard et al. 1997) next to a near target: the 0-3 stops after stop k in
 *  route A trade places with the 0-3 stops from k's neighbour nb on in route B (k then drives to
 *  nb). With one side empty it is a relocation of a chain (Or-opt between routes); 1 and 1 is a
 *  swap. Returns the routes it changed. */
export function crossExchange(routes: Route[], near: Neighbours, budget: Budget): Set<Route> {
  const touched = new Set<Route>();
  const { routeOf, posOf, locate } = locator(routes);
  const segA = new Int32Array(maxSegment);
  const segB = new Int32Array(maxSegment);
  for (let ra = 0; ra < routes.length; ra++) {
    const a = routes[ra]!;
    for (let i = 0; i < a.length; i++) {
      const k = a.seq[i]!;
      let moved = false;
      for (let x = 0; x < near.k && !moved; x++) {
        const nb = near.list[k * near.k + x]!;
        if (nb < 0) break;
        const rb = routeOf[nb]!;
        if (rb === ra || rb < 0) continue;
        const b = routes[rb]!;
        const j = posOf[nb]!;
        const bPrev = b.node(j - 1);
        for (let la = 0; la <= maxSegment && !moved && i + 1 + la <= a.length; la++) {
          for (let lb = 0; lb <= maxSegment && j + lb <= b.length; lb++) {
            if (la + lb === 0) continue;
            if (--budget.left <= 0) return touched;
            const a1 = a.node(i + 1);
            const aLast = a.node(i + la);
            const aNext = a.node(i + 1 + la);
            const bLast = b.node(j + lb - 1);
            const bNext = b.node(j + lb);
            const oldA = la > 0 ? a.d(k, a1) + a.d(aLast, aNext) : a.d(k, aNext);
            const newA = lb > 0 ? a.d(k, nb) + a.d(bLast, aNext) : a.d(k, aNext);
            const oldB = lb > 0 ? a.d(bPrev, nb) + a.d(bLast, bNext) : a.d(bPrev, bNext);
            const newB = la > 0 ? a.d(bPrev, a1) + a.d(aLast, bNext) : a.d(bPrev, bNext);
            if (oldA + oldB - newA - newB <= minGainKm) continue;
            const { maxStops } = a.p;
            if (a.length - la + lb > maxStops || b.length - lb + la > maxStops) continue;
            for (let y = 0; y < la; y++) segA[y] = a.seq[i + 1 + y]!;
            for (let y = 0; y < lb; y++) segB[y] = b.seq[j + y]!;
            budget.left -= la + lb;
            if (!a.spanFeasible(i + 1, i + 1 + la, segB, lb) || !b.spanFeasible(j, j + lb, segA, la)) continue;
            a.seq.splice(i + 1, la, ...segB.subarray(0, lb));
            b.seq.splice(j, lb, ...segA.subarray(0, la));
            a.refresh();
            b.refresh();
            budget.left -= a.length + b.length;
            for (let y = 0; y < la; y++) routeOf[segA[y]!] = rb;
            for (let y = 0; y < lb; y++) routeOf[segB[y]!] = ra;
            locate(ra);
            locate(rb);
            touched.add(a).add(b);
            moved = true; // k's successor changed: go on with the next stop.
            break;
          }
        }
      }
    }
  }
  return touched;
}

/** Local search to a local optimum (or the budget's end): intra-route 2-opt and or-opt on each
 *  changed route, cross-exchange and 2-opt* between routes. */
export function localSearch(routes: Route[], near: Neighbours, budget: Budget): void {
  let changed = new Set(routes);
  while (changed.size > 0 && budget.left > 0) {
    for (const r of changed) improveRoute(r, budget);
    changed = crossExchange(routes, near, budget);
    for (const r of exchangeTails(routes, near, budget)) changed.add(r);
  }
}
