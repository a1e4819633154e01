import { describe, expect, it } from 'vitest';
import { buildDistanceMatrix, earthRadiusKm, haversineKm } from '../../../src/routing/geo.js';

describe('great-circle distance', () => {
  it('is R·Δφ along a meridian and 0 for the same point', () => {
    expect(haversineKm(10, 20, 11, 20)).toBeCloseTo((earthRadiusKm * Math.PI) / 180, 9);
    expect(haversineKm(48.1, 11.5, 48.1, 11.5)).toBe(0);
  });

  it('is half the circumference between antipodes', () => {
    expect(haversineKm(0, 0, 0, 180)).toBeCloseTo(earthRadiusKm * Math.PI, 6);
  });

  it('builds a symmetric matrix equal to haversineKm', () => {
    const lat = [48.1, 48.2, 47.9, 48.15];
    const lon = [11.5, 11.6, 11.4, 11.45];
    const m = buildDistanceMatrix(lat, lon);
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 4; j++) {
        expect(m[i * 4 + j]).toBe(haversineKm(lat[i]!, lon[i]!, lat[j]!, lon[j]!));
        expect(m[i * 4 + j]).toBe(m[j * 4 + i]);
      }
    }
  });
});
