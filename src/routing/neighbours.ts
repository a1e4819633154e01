// For each target, its nearest other targets: the granular neighbourhood of the inter-route
// search (a stop is only tried next to one of its neighbours, the moves that can pay off).
import type { Problem } from './problem.js';

export type Neighbours = { k: number; list: Int32Array };

/** `list[node * k + r]` is the r-th nearest target of `node` (ties by node number); -1 pads. */
export function nearestTargets(p: Problem, k: number): Neighbours {
  const list = new Int32Array(p.size * k).fill(-1);
  const best = new Float64Array(k);
  for (let a = 1; a <= p.n; a++) {
    let count = 0;
    const row = a * p.size;
    const out = a * k;
    for (let b = 1; b <= p.n; b++) {
      if (b === a) continue;
      const d = p.dist[row + b]!;
      if (count === k && d >= best[k - 1]!) continue;
      // Insertion into the sorted top-k; equal distances keep the lower node first.
      let i = count < k ? count++ : k - 1;
      while (i > 0 && best[i - 1]! > d) {
        best[i] = best[i - 1]!;
        list[out + i] = list[out + i - 1]!;
        i--;
      }
      best[i] = d;
      list[out + i] = b;
    }
  }
  return { k, list };
}
