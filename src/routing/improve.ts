// Local search on distance, accepting only moves whose re-simulated timing stays feasible:
// 2-opt (reverse a span) and or-opt (move a chain of 1-3 stops, either way round) inside a route,
// then relocation of single stops between routes (granular: next to a near target). First improvement; budgets count evaluations
// (not wall-clock) so the result is the same on every machine.
import type { Neighbours } from './neighbours.js';
import type { Route } from './schedule.js';

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
  const seq = route.seq;
  let changed = false;
  for (let i = 0; i < len - 1; i++) {
    for (let j = i + 1; j < len; j++) {
      if (--budget.left <= 0) return changed;
      const a = route.node(i - 1);
      const b = route.node(j + 1);
      const gain = route.d(a, seq[i]!) + route.d(seq[j]!, b) - route.d(a, seq[j]!) - route.d(seq[i]!, b);
      if (gain <= minGainKm) continue;
      for (let x = 0; x <= j - i; x++) scratch[x] = seq[j - x]!;
      budget.left -= j - i;
      if (!route.spanFeasible(i, j + 1, scratch, j - i + 1)) continue;
      route.replaceSpan(i, scratch, j - i + 1);
      changed = true;
    }
  }
  return changed;
}

function orOpt(route: Route, scratch: Int32Array, budget: Budget): boolean {
  const seq = route.seq;
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
        const c = route.node(j - 1);
        const e = route.node(j);
        const forward = route.d(c, first) + route.d(last, e);
        const backward = segLen > 1 ? route.d(c, last) + route.d(first, e) : Infinity;
        const reversed = backward < forward;
        if (removeGain - (reversed ? backward : forward) + route.d(c, e) <= minGainKm) continue;
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
        changed = true;
        break; // The chain moved: positions from i on changed meaning; go on with the next i.
      }
    }
  }
  return changed;
}

/** Moves single stops into another route, next to one of their nearest targets, where that
 *  saves distance; returns the routes it changed. */
export function relocateBetween(routes: Route[], near: Neighbours, budget: Budget): Set<Route> {
  const touched = new Set<Route>();
  const none = new Int32Array(0);
  const p = routes[0]?.p;
  if (!p) return touched;
  const routeOf = new Int32Array(p.size).fill(-1);
  const posOf = new Int32Array(p.size);
  const locate = (r: number): void => {
    routes[r]!.seq.forEach((k, i) => {
      routeOf[k] = r;
      posOf[k] = i;
    });
  };
  routes.forEach((_, r) => locate(r));
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
      routeOf[k] = -1;
      locate(ri);
      locate(target);
      touched.add(from).add(to);
      i--;
    }
  }
  return touched;
}
