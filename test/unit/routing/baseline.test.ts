import { describe, expect, it } from 'vitest';
import { nearestNeighbourRoutes } from '../../../src/routing/nearest-neighbour.js';
import { suggestRoutes } from '../../../src/routing/suggest.js';
import { checkResult, placedCount, randomDraft } from './helpers.js';

describe('heuristic against the nearest-neighbour baseline', () => {
  it.each([1, 2, 3, 4, 5])('drives no more for the same 200 targets (seed %i)', (seed) => {
    const input = randomDraft(seed, 200, { vehicles: 6 });
    const heuristic = suggestRoutes(input);
    const nn = nearestNeighbourRoutes(input);
    checkResult(input, heuristic);
    checkResult(input, nn);
    expect(placedCount(heuristic)).toBe(200);
    expect(placedCount(nn)).toBe(200);
    expect(heuristic.totalDistanceKm).toBeLessThanOrEqual(nn.totalDistanceKm);
  });

  it.each([1, 2, 3])(
    'places at least as many of 200 windowed targets, and drives no more when it places as many (seed %i)',
    (seed) => {
      const input = randomDraft(seed, 200, { vehicles: 5, windowShare: 0.3 });
      const heuristic = suggestRoutes(input);
      const nn = nearestNeighbourRoutes(input);
      checkResult(input, heuristic);
      checkResult(input, nn);
      expect(placedCount(heuristic)).toBeGreaterThanOrEqual(placedCount(nn));
      if (placedCount(heuristic) === placedCount(nn))
        expect(heuristic.totalDistanceKm).toBeLessThanOrEqual(nn.totalDistanceKm);
    },
  );
});
