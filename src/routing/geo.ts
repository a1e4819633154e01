// Great-circle distances. Haversine on a sphere of the mean Earth radius: good to ~0.5 % against the
// ellipsoid, far below the error of "distance / average speed" as a driving time.

export const earthRadiusKm = 6371.0088;

const rad = Math.PI / 180;

export function haversineKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const sLat = Math.sin((lat2 - lat1) * rad * 0.5);
  const sLon = Math.sin((lon2 - lon1) * rad * 0.5);
  const h = sLat * sLat + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * sLon * sLon;
  return 2 * earthRadiusKm * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** Symmetric n×n matrix, row-major (`m[i * n + j]`); n ≈ 2,000 is 32 MB, fine for one draft. */
export function buildDistanceMatrix(lat: ArrayLike<number>, lon: ArrayLike<number>): Float64Array {
  const n = lat.length;
  const m = new Float64Array(n * n);
  const cosLat = new Float64Array(n);
  for (let i = 0; i < n; i++) cosLat[i] = Math.cos(lat[i]! * rad);
  for (let i = 0; i < n; i++) {
    const lati = lat[i]!;
    const loni = lon[i]!;
    const ci = cosLat[i]!;
    for (let j = i + 1; j < n; j++) {
      // haversineKm with the cosines hoisted (bit-identical): 2M pairs for n = 2,000.
      const sLat = Math.sin((lat[j]! - lati) * rad * 0.5);
      const sLon = Math.sin((lon[j]! - loni) * rad * 0.5);
      const h = sLat * sLat + ci * cosLat[j]! * sLon * sLon;
      const d = 2 * earthRadiusKm * Math.asin(Math.min(1, Math.sqrt(h)));
      m[i * n + j] = d;
      m[j * n + i] = d;
    }
  }
  return m;
}
