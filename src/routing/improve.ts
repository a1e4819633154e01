// Local search on distance, accepting only moves whose re-simulated timing stays feasible:
// 2-opt (reverse a span) and or-opt (move a chain of 1-3 stops, either way round) inside a route,
// and between routes relocation of single stops and exchange of route tails (2-opt*), each only
// next to one of a stop's nearest targets.
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

/** Moves single stops into another route, next to one of their nearest targets, where that
 *  saves distance; returns the routes it changed. */
export function relocateBetween(routes: Route[], near: Neighbours, budget: Budget): Set<Route> {
  const touched = new Set<Route>();
  const none = new Int32Array(0);
  const { routeOf, posOf, locate } = locator(routes);
  for (let ri = 0; ri < routes.length; ri++) {
    const from = routes[ri]!;
    for (let i = 0; i < from.length; i++) {
      const k = from.seq[i]!;
      const a = from.node(i - 1);
      const b = from.node(i + 1);
      const removeGain = from.d(a, k) + from.d(k, b) - from.d(a, b);
      if (removeGain <= minGainKm) continue;
      let best = removeGain - minGainKm;
      let target = -1;
      let at = -1;
      for (let x = 0; x < near.k; x++) {
        const nb = near.list[k * near.k + x]!;
        if (nb < 0) break;
        const rt = routeOf[nb]!;
        if (rt === ri || rt < 0) continue;
        budget.left -= 2;
        // Just before or just after the neighbour.
        for (let pos = posOf[nb]!; pos <= posOf[nb]! + 1; pos++) {
          const c = routes[rt]!.insertionCost(k, pos, best);
          if (c < best) {
            best = c;
            target = rt;
            at = pos;
          }
        }
      }
      if (budget.left <= 0) return touched;
      // Removal cannot break a route on a metric, but float noise could: check rather than assume.
      if (target < 0 || !from.spanFeasible(i, i + 1, none, 0)) continue;
      const to = routes[target]!;
      from.removeAt(i);
      to.insert(k, at);
      budget.left -= from.length + to.length;
      routeOf[k] = -1;
      locate(ri);
      locate(target);
      touched.add(from).add(to);
      i--;
    }
  }
  return touched;
}
