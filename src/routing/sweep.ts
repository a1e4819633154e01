// Splits the targets among vehicles by a sweep: sort by polar angle around the depot, start just
// after the widest empty sector (so no cluster straddles it), and cut the circle into `count`
// consecutive sectors of about equal workload (service minutes plus a travel allowance per stop).
import type { Neighbours } from './neighbours.js';
import type { Problem } from './problem.js';

export function sweepClusters(p: Problem, count: number, near: Neighbours): number[][] {
  const clusters: number[][] = Array.from({ length: count }, () => []);
  if (p.n === 0) return clusters;
  const cosLat = Math.cos((p.lat[0]! * Math.PI) / 180);
  const angle = new Float64Array(p.size);
  const order: number[] = [];
  for (let k = 1; k <= p.n; k++) {
    let dLon = p.lon[k]! - p.lon[0]!;
    if (dLon > 180) dLon -= 360;
    else if (dLon < -180) dLon += 360;
    angle[k] = Math.atan2(p.lat[k]! - p.lat[0]!, dLon * cosLat);
    order.push(k);
  }
  order.sort((a, b) => angle[a]! - angle[b]! || p.dist[a]! - p.dist[b]! || a - b);

  let startAt = 0;
  let widest = angle[order[0]!]! + 2 * Math.PI - angle[order[order.length - 1]!]!;
  for (let i = 1; i < order.length; i++) {
    const gap = angle[order[i]!]! - angle[order[i - 1]!]!;
    if (gap > widest) {
      widest = gap;
      startAt = i;
    }
  }

  // Travel allowance: the mean distance to the nearest other target, as minutes of driving.
  // Without it a cluster of many zero-service stops would count as no work.
  let nearestSum = 0;
  for (let k = 1; k <= p.n; k++) {
    const nearest = near.list[k * near.k]!;
    if (nearest >= 0) nearestSum += p.dist[k * p.size + nearest]!;
  }
  const allowance = Math.max(1e-6, (nearestSum / p.n) * p.minutesPerKm);
  const weight = (k: number): number => p.service[k]! + allowance;
  let total = 0;
  for (const k of order) total += weight(k);

  // Each target goes to the sector its workload midpoint falls in: balanced, order-preserving.
  let before = 0;
  for (let i = 0; i < order.length; i++) {
    const k = order[(startAt + i) % order.length]!;
    const w = weight(k);
    const c = Math.min(count - 1, Math.floor(((before + w / 2) / total) * count));
    clusters[c]!.push(k);
    before += w;
  }
  return clusters;
}
