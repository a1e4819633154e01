// Input and output of the route-suggestion engine. Plain JSON-compatible data so it crosses a
// worker_threads boundary (structured clone) unchanged.

/** A local wall-clock time of the draft's date, 'HH:MM' ('24:00' allowed as a shift or window end). */
export type ClockTime = string;

export type GeoPoint = { lat: number; lon: number };

export type TimeWindow = { start: ClockTime; end: ClockTime };

export type RouteTarget = {
  externalId: string;
  /** null when the imported target could not be geocoded: reported as NoCoordinates. */
  lat: number | null;
  lon: number | null;
  serviceMinutes: number;
  /** When the visit may take place: the whole service (arrival to departure) fits in one window.
   *  Empty = any time in the shift. */
  timeWindows: TimeWindow[];
  /** Higher is more important (default 0): higher tiers are placed first, so a shortfall of
   *  capacity leaves out low-priority targets. */
  priority?: number;
};

export type RouteSuggestionInput = {
  depot: GeoPoint;
  /** Where the vehicles end the day; the start depot when absent. */
  endDepot?: GeoPoint;
  /** 'YYYY-MM-DD'; all times are local times of this single day (no time zones). */
  date: string;
  /** Number of vehicles (technicians), 1..50. */
  vehicles: number;
  shift: { start: ClockTime; end: ClockTime };
  maxStopsPerRoute?: number;
  /** Great-circle distance / this speed = driving time. Default 40 km/h. */
  averageSpeedKmh?: number;
  targets: RouteTarget[];
};

export type RouteStop = {
  sequence: number;
  externalId: string;
  lat: number;
  lon: number;
  /** When service begins (inside a window); any waiting for the window happens before it. */
  arrival: ClockTime;
  /** arrival + serviceMinutes. */
  departure: ClockTime;
  /** Idle minutes between driving in and `arrival` (whole minutes). */
  waitMinutes: number;
  /** Great-circle km from the previous stop, or from the depot for the first stop. */
  legDistanceKm: number;
};

export type SuggestedRoute = {
  /** 1-based vehicle number. */
  vehicle: number;
  stops: RouteStop[];
  /** Depot, all stops, end depot (0 for a vehicle with no stops: it does not leave). */
  distanceKm: number;
  /** From shift start (the vehicle leaves the depot then) to arrival at the end depot. */
  durationMinutes: number;
  start: ClockTime;
  end: ClockTime;
};

export type UnplacedReason = 'NoCoordinates' | 'OutsideTimeWindows' | 'OverCapacity';

export type UnplacedTarget = { externalId: string; reason: UnplacedReason };

export type RouteSuggestionResult = {
  /** One entry per vehicle, in vehicle order. */
  routes: SuggestedRoute[];
  /** In input order. */
  unplaced: UnplacedTarget[];
  totalDistanceKm: number;
  totalDurationMinutes: number;
};
