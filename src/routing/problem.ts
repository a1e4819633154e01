// Validates the input and turns it into flat arrays the heuristics index by node number:
// 0 = start depot, 1..n = routable targets, n + 1 = end depot (same point as 0 when absent).
import { RouteInputError } from './errors.js';
import { buildDistanceMatrix, haversineKm } from './geo.js';
import { parseClock } from './time.js';
import type { GeoPoint, RouteSuggestionInput, UnplacedReason } from './types.js';

/** A draft's average speed when its input names none. */
export const defaultAverageSpeedKmh = 40;
/** The distance matrix grows with the square: 5,000 targets is 200 MB. */
export const maxTargets = 5_000;

/** Throws RouteInputError (field `targets`) when a draft holds more than maxTargets targets. */
export function checkTargetCount(count: number): void {
  if (count > maxTargets) throw new RouteInputError(`targets must hold at most ${maxTargets} entries`);
}

export type Problem = {
  n: number;
  /** Node count, n + 2; also the row length of `dist`. */
  size: number;
  end: number;
  /** Input index of each node (-1 for the depots). */
  inputIndex: Int32Array;
  lat: Float64Array;
  lon: Float64Array;
  dist: Float64Array;
  minutesPerKm: number;
  service: Float64Array;
  priority: Float64Array;
  /** Whether the input gave the target explicit windows (for the unplaced reason). */
  hasWindows: Uint8Array;
  /** Allowed service *start* intervals, sorted and disjoint: node i owns [winOffset[i], winOffset[i+1]). */
  winOffset: Int32Array;
  winStart: Float64Array;
  winEnd: Float64Array;
  shiftStart: number;
  shiftEnd: number;
  vehicles: number;
  maxStops: number;
  /** Targets filtered out before routing, by input index. */
  rejected: Map<number, UnplacedReason>;
};

type Interval = [number, number];

function checkPoint(point: GeoPoint | undefined, field: string): GeoPoint {
  if (!point || !validLat(point.lat) || !validLon(point.lon)) {
    throw new RouteInputError(`${field} must have lat in [-90, 90] and lon in [-180, 180]`);
  }
  return point;
}

const validLat = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= 90;
const validLon = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= 180;

/** Service-start intervals: the visit [start, start + service] must fit in a window and in the shift. */
function startIntervals(windows: Interval[], service: number, shiftStart: number, shiftEnd: number): Interval[] {
  const clipped: Interval[] = [];
  for (const [ws, we] of windows) {
    const s = Math.max(ws, shiftStart);
    const e = Math.min(we, shiftEnd) - service;
    if (s <= e) clipped.push([s, e]);
  }
  clipped.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: Interval[] = [];
  for (const w of clipped) {
    const last = merged[merged.length - 1];
    if (last && w[0] <= last[1]) last[1] = Math.max(last[1], w[1]);
    else merged.push([w[0], w[1]]);
  }
  return merged;
}

/** Can the target be served by a vehicle doing nothing else (depot -> target -> end depot)? */
function servableAlone(
  starts: Interval[],
  toKm: number,
  backKm: number,
  service: number,
  shiftStart: number,
  shiftEnd: number,
  minutesPerKm: number,
): boolean {
  const arrive = shiftStart + toKm * minutesPerKm;
  for (const [s, e] of starts) {
    const begin = Math.max(arrive, s);
    if (begin <= e) return begin + service + backKm * minutesPerKm <= shiftEnd;
  }
  return false;
}

export function buildProblem(input: RouteSuggestionInput): Problem {
  const depot = checkPoint(input.depot, 'depot');
  const endDepot = checkPoint(input.endDepot ?? input.depot, 'endDepot');
  if (typeof input.date !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(input.date)) {
    throw new RouteInputError("date must be 'YYYY-MM-DD'");
  }
  if (!Number.isInteger(input.vehicles) || input.vehicles < 1 || input.vehicles > 50) {
    throw new RouteInputError('vehicles must be an integer from 1 to 50');
  }
  const shiftStart = parseClock(input.shift?.start, 'shift.start');
  const shiftEnd = parseClock(input.shift?.end, 'shift.end');
  if (shiftEnd <= shiftStart) throw new RouteInputError('shift.end must be after shift.start (single day)');
  const maxStops = input.maxStopsPerRoute ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isInteger(maxStops) || maxStops < 1)
    throw new RouteInputError('maxStopsPerRoute must be a positive integer');
  const speed = input.averageSpeedKmh ?? defaultAverageSpeedKmh;
  if (typeof speed !== 'number' || !Number.isFinite(speed) || speed <= 0) {
    throw new RouteInputError('averageSpeedKmh must be a positive number');
  }
  if (!Array.isArray(input.targets)) throw new RouteInputError('targets must be an array');
  checkTargetCount(input.targets.length);
  const minutesPerKm = 60 / speed;

  const rejected = new Map<number, UnplacedReason>();
  const kept: {
    index: number;
    lat: number;
    lon: number;
    service: number;
    starts: Interval[];
    hasWindows: boolean;
    priority: number;
  }[] = [];
  const wholeShift: Interval[] = [[shiftStart, shiftEnd]];
  const ids = new Set<string>();
  input.targets.forEach((t, index) => {
    const field = `targets[${index}]`;
    if (typeof t?.externalId !== 'string') throw new RouteInputError(`${field}.externalId must be a string`);
    // The output names targets by externalId only.
    if (ids.has(t.externalId))
      throw new RouteInputError(`${field}.externalId ${JSON.stringify(t.externalId)} is not unique`);
    ids.add(t.externalId);
    if (typeof t.serviceMinutes !== 'number' || !Number.isFinite(t.serviceMinutes) || t.serviceMinutes < 0) {
      throw new RouteInputError(`${field}.serviceMinutes must be a non-negative number`);
    }
    const priority = t.priority ?? 0;
    if (typeof priority !== 'number' || !Number.isFinite(priority))
      throw new RouteInputError(`${field}.priority must be a number`);
    if (!Array.isArray(t.timeWindows ?? [])) throw new RouteInputError(`${field}.timeWindows must be an array`);
    const windows = (t.timeWindows ?? []).map((w, wi): Interval => {
      const s = parseClock(w.start, `${field}.timeWindows[${wi}].start`);
      const e = parseClock(w.end, `${field}.timeWindows[${wi}].end`);
      if (e < s) throw new RouteInputError(`${field}.timeWindows[${wi}] ends before it starts (single day)`);
      return [s, e];
    });
    if (t.lat === null || t.lon === null || t.lat === undefined || t.lon === undefined) {
      rejected.set(index, 'NoCoordinates');
      return;
    }
    if (!validLat(t.lat) || !validLon(t.lon))
      throw new RouteInputError(`${field} must have lat in [-90, 90] and lon in [-180, 180] or null`);
    const service = t.serviceMinutes;
    const toKm = haversineKm(depot.lat, depot.lon, t.lat, t.lon);
    const backKm = haversineKm(t.lat, t.lon, endDepot.lat, endDepot.lon);
    const hasWindows = windows.length > 0;
    const starts = startIntervals(hasWindows ? windows : wholeShift, service, shiftStart, shiftEnd);
    if (!servableAlone(starts, toKm, backKm, service, shiftStart, shiftEnd, minutesPerKm)) {
      // Windows are to blame only when the target would fit the shift without them.
      const anyTime = startIntervals(wholeShift, service, shiftStart, shiftEnd);
      const fitsShift = servableAlone(anyTime, toKm, backKm, service, shiftStart, shiftEnd, minutesPerKm);
      rejected.set(index, hasWindows && fitsShift ? 'OutsideTimeWindows' : 'OverCapacity');
      return;
    }
    kept.push({ index, lat: t.lat, lon: t.lon, service, starts, hasWindows, priority });
  });

  const n = kept.length;
  const size = n + 2;
  const inputIndex = new Int32Array(size).fill(-1);
  const lat = new Float64Array(size);
  const lon = new Float64Array(size);
  const service = new Float64Array(size);
  const priority = new Float64Array(size);
  const hasWindows = new Uint8Array(size);
  const winOffset = new Int32Array(size + 1);
  const windowCount = kept.reduce((sum, k) => sum + k.starts.length, 0);
  const winStart = new Float64Array(windowCount);
  const winEnd = new Float64Array(windowCount);
  lat[0] = depot.lat;
  lon[0] = depot.lon;
  lat[n + 1] = endDepot.lat;
  lon[n + 1] = endDepot.lon;
  let w = 0;
  for (let i = 1; i <= n; i++) {
    const k = kept[i - 1]!;
    inputIndex[i] = k.index;
    lat[i] = k.lat;
    lon[i] = k.lon;
    service[i] = k.service;
    priority[i] = k.priority;
    hasWindows[i] = k.hasWindows ? 1 : 0;
    winOffset[i] = w;
    for (const [s, e] of k.starts) {
      winStart[w] = s;
      winEnd[w] = e;
      w++;
    }
  }
  // Depots own no windows; every offset past the last target points at the end.
  winOffset[n + 1] = w;
  winOffset[n + 2] = w;

  return {
    n,
    size,
    end: n + 1,
    inputIndex,
    lat,
    lon,
    dist: buildDistanceMatrix(lat, lon),
    minutesPerKm,
    service,
    priority,
    hasWindows,
    winOffset,
    winStart,
    winEnd,
    shiftStart,
    shiftEnd,
    vehicles: input.vehicles,
    maxStops,
    rejected,
  };
}
