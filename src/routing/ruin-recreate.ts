// Ruin and recreate after SISR (Christiaens & Vanden Berghe, "Slack induction by string removals
// for vehicle routing problems", Transportation Science 2020): remove a few strings of consecutive
// stops from routes near a random target, re-insert them one by one at the cheapest feasible place
// while skipping ("blinking" past) 1 % of the places, and accept by simulated annealing on km.
// Strings, not single stops, free room for whole sequences in a neighbouring route; blinks vary the
// rebuilt routes. Sometimes a whole route is removed and may not reopen (route elimination): the
// annealing keeps the smaller fleet when it drives no more than the temperature allows.
// The placement comes first: a candidate that leaves out more targets of a priority tier (counted
// from the highest) is never accepted; one that leaves out fewer always is.
import type { Neighbours } from './neighbours.js';
import type { Problem } from './problem.js';
import { pick, type Random } from './random.js';
import type { Route } from './schedule.js';

export type Solution = { routes: Route[]; unplaced: number[] };

/** Average stops removed per ruin and longest string (SISR's c̄ and L_max). */
const averageRemoved = 10;
const maxString = 10;
/** Chance to skip an insertion place (SISR's blink rate). */
const blinkRate = 0.01;
/** Insertion places looked at first: next to this many of the target's nearest placed targets. */
const insertionNeighbours = 12;
/** Up to this many unplaced targets are all retried at every step. */
const retryAll = 20;
/** Chance that a ruin removes one whole route and the recreate may not open a vehicle. */
const eliminationRate = 0.04;
/** Annealing temperatures as multiples of the start solution's mean leg (km). */
const startTemperature = 6;
const endTemperature = 0.03;

type State = {
  routes: Route[];
  unplaced: number[];
  /** Route index of each node, -1 when unplaced, and its position there. */
  routeOf: Int32Array;
  posOf: Int32Array;
  /** Unplaced targets per priority tier, highest tier first. */
  missing: Int32Array;
  km: number;
};

export class RuinAndRecreate {
  /** Evaluations used: insertion places looked at plus stops re-timed. */
  used = 0;
  private readonly tierOf: Int32Array;
  private readonly tierCount: number;
  private readonly owner: Int32Array;
  private readonly ruinedMark: Int32Array;
  private step = 0;

  constructor(
    private readonly p: Problem,
    private readonly adj: Neighbours,
    private readonly rnd: Random,
  ) {
    const tiers = [...new Set(Array.from(p.priority.subarray(1, p.n + 1)))].sort((a, b) => b - a);
    this.tierCount = Math.max(1, tiers.length);
    this.tierOf = new Int32Array(p.size);
    for (let k = 1; k <= p.n; k++) this.tierOf[k] = tiers.indexOf(p.priority[k]!);
    this.owner = new Int32Array(p.vehicles).fill(-1);
    this.retrying = new Uint8Array(p.size);
    this.scanned = new Int32Array(p.vehicles).fill(-1);
    this.ruinedMark = new Int32Array(p.vehicles).fill(-1);
  }

  /** Searches from `start` until `evaluations` are used; returns the best solution seen. */
  run(start: Solution, evaluations: number): Solution {
    let current = this.state(start.routes, start.unplaced);
    let best = current;
    const placed = this.p.n - current.unplaced.length;
    const meanLeg = current.km / Math.max(1, placed + current.routes.filter((r) => r.length > 0).length);
    const t0 = startTemperature * meanLeg;
    const ratio = endTemperature / startTemperature;
    const limit = this.used + evaluations;
    const from = this.used;
    while (this.used < limit) {
      const temperature = t0 * ratio ** ((this.used - from) / evaluations);
      const candidate = this.neighbour(current);
      if (!candidate) continue;
      const order = this.compare(candidate, current);
      if (order < 0 || (order === 0 && candidate.km < current.km - temperature * Math.log(this.rnd()))) {
        current = candidate;
        if (this.better(current, best)) best = current;
      }
    }
    return { routes: best.routes, unplaced: best.unplaced };
  }

  private state(routes: Route[], unplaced: number[]): State {
    const s: State = {
      routes,
      unplaced,
      routeOf: new Int32Array(this.p.size).fill(-1),
      posOf: new Int32Array(this.p.size),
      missing: new Int32Array(this.tierCount),
      km: 0,
    };
    routes.forEach((_, r) => this.locate(s, r));
    this.account(s);
    return s;
  }

  /** Re-reads where route r's stops are. */
  private locate(s: State, r: number): void {
    const seq = s.routes[r]!.seq;
    for (let i = 0; i < seq.length; i++) {
      s.routeOf[seq[i]!] = r;
      s.posOf[seq[i]!] = i;
    }
  }

  private account(s: State): void {
    s.missing = new Int32Array(this.tierCount);
    for (const k of s.unplaced) s.missing[this.tierOf[k]!]!++;
    s.km = s.routes.reduce((sum, r) => sum + r.km, 0);
  }

  /** Negative when `a` leaves out fewer targets, tier by tier from the highest. */
  private compare(a: State, b: State): number {
    for (let t = 0; t < this.tierCount; t++) if (a.missing[t] !== b.missing[t]) return a.missing[t]! - b.missing[t]!;
    return 0;
  }

  /** Leaves out fewer (tier by tier), or as many and drives less. */
  private better(a: State, b: State): boolean {
    const order = this.compare(a, b);
    return order < 0 || (order === 0 && a.km < b.km - 1e-9);
  }

  /** A candidate from `current`, or null when it would leave out more than `current` does. */
  private neighbour(current: State): State | null {
    this.step++;
    const next: State = {
      routes: current.routes.slice(),
      unplaced: current.unplaced.slice(),
      routeOf: current.routeOf.slice(),
      posOf: current.posOf.slice(),
      missing: current.missing,
      km: 0,
    };
    const eliminate = this.rnd() < eliminationRate;
    const removed = eliminate ? this.removeRoute(next) : this.removeStrings(next);
    if (!this.recreate(next, removed, this.retried(next, removed), !eliminate, current.missing)) return null;
    this.account(next);
    return next;
  }

  /** The route, copied first when this step has not copied it yet (accepted states are shared). */
  private own(s: State, r: number): Route {
    if (this.owner[r] !== this.step) {
      s.routes[r] = s.routes[r]!.clone();
      this.owner[r] = this.step;
      this.used += s.routes[r].length;
    }
    return s.routes[r]!;
  }

  private removeRoute(s: State): number[] {
    const used = s.routes.map((r, i) => i).filter((i) => s.routes[i]!.length > 0);
    if (used.length === 0) return [];
    // The shorter of two random routes: small routes are the ones worth dissolving.
    const a = used[pick(this.rnd, used.length)]!;
    const b = used[pick(this.rnd, used.length)]!;
    const r = s.routes[a]!.length <= s.routes[b]!.length ? a : b;
    const route = this.own(s, r);
    const removed = route.seq.slice();
    route.replaceAll([]);
    for (const k of removed) s.routeOf[k] = -1;
    return removed;
  }

  /** SISR's string removal around a random seed target (a placed one, or an unplaced one so the
   *  recreate may trade it for stops near it). */
  private removeStrings(s: State): number[] {
    const { p, rnd } = this;
    let placedCount = 0;
    let usedRoutes = 0;
    for (const r of s.routes) {
      placedCount += r.length;
      if (r.length > 0) usedRoutes++;
    }
    if (placedCount === 0) return [];
    const maxLength = Math.min(maxString, placedCount / usedRoutes);
    const maxStrings = (4 * averageRemoved) / (1 + maxLength) - 1;
    const strings = 1 + pick(rnd, Math.max(1, Math.floor(maxStrings)));
    const seed = s.unplaced.length > 0 && rnd() < 0.5 ? s.unplaced[pick(rnd, s.unplaced.length)]! : 1 + pick(rnd, p.n);
    const removed: number[] = [];
    let ruined = 0;
    for (let x = -1; x < this.adj.k && ruined < strings; x++) {
      const c = x < 0 ? seed : this.adj.list[seed * this.adj.k + x]!;
      if (c < 0) break;
      const r = s.routeOf[c]!;
      if (r < 0 || this.ruinedMark[r] === this.step) continue;
      this.ruinedMark[r] = this.step;
      ruined++;
      const route = this.own(s, r);
      const len = route.length;
      const length = 1 + pick(rnd, Math.max(1, Math.floor(Math.min(len, maxLength))));
      const at = route.seq.indexOf(c);
      // A split string keeps `keep` stops in its middle: removal need not be contiguous.
      const keep = length < len && rnd() < 0.5 ? 1 + pick(rnd, Math.min(length, len - length)) : 0;
      const span = length + keep;
      const first = Math.min(Math.max(0, at - pick(rnd, span)), len - span);
      const cut = route.seq.splice(first, span);
      const kept = keep > 0 ? cut.splice(pick(rnd, length + 1), keep) : [];
      route.seq.splice(first, 0, ...kept);
      route.refresh();
      this.used += route.length;
      for (const k of cut) s.routeOf[k] = -1;
      this.locate(s, r);
      removed.push(...cut);
    }
    return removed;
  }

  /** The unplaced targets worth retrying: all when few, else those near the removed stops (the
   *  room freed is there), so an overloaded day does not retry hundreds each step. */
  private retried(s: State, removed: number[]): number[] {
    if (s.unplaced.length <= retryAll) return s.unplaced;
    const unplaced = new Set(s.unplaced);
    const near = new Set<number>();
    for (const k of removed) {
      for (let x = 0; x < insertionNeighbours; x++) {
        const nb = this.adj.list[k * this.adj.k + x]!;
        if (unplaced.has(nb)) near.add(nb);
      }
    }
    this.used += s.unplaced.length + removed.length * insertionNeighbours;
    s.unplaced = s.unplaced.filter((k) => !near.has(k));
    return [...near].sort((a, b) => a - b);
  }

  /** Inserts each target at its cheapest place (blinking), higher tiers first, in one of SISR's
   *  orders; what fits nowhere joins the state's unplaced list. Gives up (false) as soon as the
   *  result would leave out more than `bound` (the current solution's missing per tier). */
  private recreate(s: State, removed: number[], retried: number[], mayOpen: boolean, bound: Int32Array): boolean {
    const targets = [...removed, ...retried];
    for (const k of retried) this.retrying[k] = 1;
    const { p, rnd } = this;
    const key = this.orderKey(pick(rnd, 10));
    const keyed = targets.map((k) => ({ k, tier: this.tierOf[k]!, key: key(k) }));
    keyed.sort((a, b) => a.tier - b.tier || a.key - b.key || a.k - b.k);
    const overloaded = s.unplaced.length + retried.length > 0;
    if (retried === s.unplaced) s.unplaced = [];
    const missing = new Int32Array(this.tierCount);
    for (const k of s.unplaced) missing[this.tierOf[k]!]!++;
    let settled = 0; // tiers above this one compare equal to the bound...
    let better = false; // ...unless one of them already leaves out fewer
    for (const { k, tier } of keyed) {
      for (; !better && settled < tier; settled++) {
        if (missing[settled]! < bound[settled]!) better = true;
        else if (missing[settled]! > bound[settled]!) return this.giveUp(retried);
      }
      this.used += 1 + (s.routes.length >> 2);
      this.best = Infinity;
      this.bestRoute = -1;
      this.bestPos = -1;
      const empty = mayOpen ? s.routes.findIndex((r) => r.length === 0) : -1;
      // Granular first: just before or after one of the target's nearest placed neighbours (with
      // a window, anywhere in their routes: the right time may be elsewhere in the route), or a
      // vehicle of its own; all routes only when none of those places is feasible.
      const wholeRoutes = p.hasWindows[k] === 1;
      for (let x = 0; x < insertionNeighbours; x++) {
        const nb = this.adj.list[k * this.adj.k + x]!;
        if (nb < 0) break;
        const r = s.routeOf[nb]!;
        if (r < 0 || s.routes[r]!.full) continue;
        const route = s.routes[r]!;
        if (!wholeRoutes) {
          this.tryAt(route, k, r, s.posOf[nb]!);
          this.tryAt(route, k, r, s.posOf[nb]! + 1);
        } else if (this.scanned[r] !== this.mark) {
          this.scanned[r] = this.mark;
          for (let pos = 0; pos <= route.length; pos++) this.tryAt(route, k, r, pos);
        }
      }
      this.mark++;
      if (empty >= 0) this.tryAt(s.routes[empty]!, k, empty, 0);
      // A retried target already failed everywhere: only the room freed near it is new. On an
      // overloaded day (something left out) the routes are full: a full scan rarely pays.
      if (this.bestRoute < 0 && !this.retrying[k] && !overloaded) {
        for (let r = 0; r < s.routes.length; r++) {
          const route = s.routes[r]!;
          if (route.length === 0 || route.full) continue;
          for (let pos = 0; pos <= route.length; pos++) this.tryAt(route, k, r, pos);
        }
      }
      if (this.bestRoute < 0) {
        s.unplaced.push(k);
        if (++missing[tier]! > bound[tier]! && !better && settled === tier) return this.giveUp(retried);
        continue;
      }
      const route = this.own(s, this.bestRoute);
      route.insert(k, this.bestPos);
      this.used += route.length;
      this.locate(s, this.bestRoute);
    }
    for (const k of retried) this.retrying[k] = 0;
    s.unplaced.sort((a, b) => a - b);
    return true;
  }

  private giveUp(retried: number[]): false {
    for (const k of retried) this.retrying[k] = 0;
    return false;
  }

  private readonly scanned: Int32Array;
  private readonly retrying: Uint8Array;
  private mark = 0;
  private best = Infinity;
  private bestRoute = -1;
  private bestPos = -1;

  /** Looks at inserting k before `pos` of route r (unless blinking past it). */
  private tryAt(route: Route, k: number, r: number, pos: number): void {
    this.used++;
    if (this.rnd() < blinkRate) return;
    const extra = route.length === 0 ? this.p.dist[this.p.end]! : 0; // an idle vehicle stays home
    const c = route.insertionCost(k, pos, this.best - extra) + extra;
    if (c < this.best) {
      this.best = c;
      this.bestRoute = r;
      this.bestPos = pos;
    }
  }

  /** SISR's insertion orders (random, largest first, far, close) plus, for windows, earliest
   *  latest start first; weights 4 : 2 : 2 : 1 : 1. */
  private orderKey(choice: number): (k: number) => number {
    const { p, rnd } = this;
    if (choice < 4) return () => rnd();
    if (choice < 6) return (k) => -p.service[k]!;
    if (choice < 8) return (k) => -p.dist[k]!;
    if (choice < 9) return (k) => p.dist[k]!;
    return (k) => p.winEnd[p.winOffset[k + 1]! - 1]!;
  }
}
