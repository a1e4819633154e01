// One vehicle's route and its timing. Waiting is allowed, so arriving earlier never hurts: for
// each position we keep the departure time (forward pass) and the latest arrival that keeps the
// rest of the route feasible (backward pass). An insertion or a changed span is then checked by
// simulating only the changed nodes and comparing with the latest arrival where they rejoin.
import type { Problem } from './problem.js';

/** Slack for float noise in time comparisons (minutes). */
export const timeEpsilon = 1e-9;

/** Earliest service start at `node` when arriving at `arrival`; Infinity when no window is left. */
export function earliestStart(p: Problem, node: number, arrival: number): number {
  for (let w = p.winOffset[node]!, last = p.winOffset[node + 1]!; w < last; w++) {
    if (p.winEnd[w]! + timeEpsilon >= arrival) return Math.max(arrival, p.winStart[w]!);
  }
  return Infinity;
}

/** Latest service start at `node` not after `bound`; -Infinity when none. */
function latestStart(p: Problem, node: number, bound: number): number {
  for (let w = p.winOffset[node + 1]! - 1, first = p.winOffset[node]!; w >= first; w--) {
    if (p.winStart[w]! <= bound) return Math.min(bound, p.winEnd[w]!);
  }
  return -Infinity;
}

export class Route {
  readonly seq: number[] = [];
  /** Departure time from seq[i]. */
  readonly dep: number[] = [];
  /** Latest arrival at position i (i = seq.length is the end depot) keeping the rest feasible. */
  readonly late: number[];
  distanceKm = 0;

  constructor(readonly p: Problem) {
    this.late = [p.shiftEnd];
  }

  /** An independent copy (the search changes copies, so accepted solutions can share routes). */
  clone(): Route {
    const copy = new Route(this.p);
    copy.seq.push(...this.seq);
    copy.dep.push(...this.dep);
    copy.late.length = 0;
    copy.late.push(...this.late);
    copy.distanceKm = this.distanceKm;
    return copy;
  }

  /** Km driven: an unused vehicle does not leave the depot. */
  get km(): number {
    return this.seq.length > 0 ? this.distanceKm : 0;
  }

  get length(): number {
    return this.seq.length;
  }

  get full(): boolean {
    return this.seq.length >= this.p.maxStops;
  }

  node(pos: number): number {
    return pos < 0 ? 0 : pos >= this.seq.length ? this.p.end : this.seq[pos]!;
  }

  d(a: number, b: number): number {
    return this.p.dist[a * this.p.size + b]!;
  }

  /** Recomputes times and distance after the sequence changed. */
  refresh(): void {
    const { p, seq, dep, late } = this;
    const len = seq.length;
    dep.length = len;
    late.length = len + 1;
    let t = p.shiftStart;
    let prev = 0;
    let km = 0;
    for (let i = 0; i < len; i++) {
      const k = seq[i]!;
      const leg = this.d(prev, k);
      km += leg;
      t = earliestStart(p, k, t + leg * p.minutesPerKm) + p.service[k]!;
      dep[i] = t;
      prev = k;
    }
    this.distanceKm = km + this.d(prev, p.end);
    let next = p.end;
    let bound = p.shiftEnd;
    late[len] = bound;
    for (let i = len - 1; i >= 0; i--) {
      const k = seq[i]!;
      bound = latestStart(p, k, bound - this.d(k, next) * p.minutesPerKm - p.service[k]!);
      late[i] = bound;
      next = k;
    }
  }

  /** Extra km for inserting `k` before position `pos` (0..length), or Infinity when infeasible
   *  or not below `limit` (the distance test is cheaper than the timing, so it goes first). */
  insertionCost(k: number, pos: number, limit = Infinity): number {
    const { p, seq } = this;
    if (seq.length >= p.maxStops) return Infinity;
    const prev = pos > 0 ? seq[pos - 1]! : 0;
    const next = pos < seq.length ? seq[pos]! : p.end;
    const dist = p.dist;
    const toK = dist[prev * p.size + k]!;
    const fromK = dist[k * p.size + next]!;
    const cost = toK + fromK - dist[prev * p.size + next]!;
    if (!(cost < limit)) return Infinity;
    const start = earliestStart(p, k, (pos > 0 ? this.dep[pos - 1]! : p.shiftStart) + toK * p.minutesPerKm);
    return start + p.service[k]! + fromK * p.minutesPerKm > this.late[pos]! + timeEpsilon ? Infinity : cost;
  }

  /** Whether replacing positions [from, to) by `nodes[0..count)` keeps the route feasible. */
  spanFeasible(from: number, to: number, nodes: ArrayLike<number>, count: number): boolean {
    const { p } = this;
    let t = from > 0 ? this.dep[from - 1]! : p.shiftStart;
    let prev = this.node(from - 1);
    for (let i = 0; i < count; i++) {
      const k = nodes[i]!;
      t = earliestStart(p, k, t + this.d(prev, k) * p.minutesPerKm);
      if (t === Infinity) return false;
      t += p.service[k]!;
      prev = k;
    }
    return t + this.d(prev, this.node(to)) * p.minutesPerKm <= this.late[to]! + timeEpsilon;
  }

  insert(k: number, pos: number): void {
    this.seq.splice(pos, 0, k);
    this.refresh();
  }

  replaceAll(nodes: readonly number[]): void {
    this.seq.splice(0, this.seq.length, ...nodes);
    this.refresh();
  }

  /** Overwrites positions [from, from + count) with `nodes` (a permutation of them) and refreshes. */
  replaceSpan(from: number, nodes: ArrayLike<number>, count: number): void {
    for (let i = 0; i < count; i++) this.seq[from + i] = nodes[i]!;
    this.refresh();
  }
}
