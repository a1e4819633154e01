// Route-suggestion instances for bench/routing.ts: the reference set (../shared/routing-reference,
// with VROOM's and OR-Tools' figures) and seeded instances of the same kinds, so a change is not
// tuned to six days only.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RouteSuggestionInput, TimeWindow } from '../src/routing/types.js';
import { mulberry32 } from '../test/support/prng.js';

export type SolverFigures = { placed: number; routes: number; km: number; routeMinutes?: number; wallSeconds: number };

export type ReferenceInstance = {
  name: string;
  input: RouteSuggestionInput;
  vroom: SolverFigures;
  ortools5?: SolverFigures;
  ortools30?: SolverFigures;
};

/** ROUTING_REFERENCE_DIR, else ../shared/routing-reference from the working directory; [] when absent. */
export function referenceInstances(): ReferenceInstance[] {
  const dir = resolve(process.env.ROUTING_REFERENCE_DIR ?? '../shared/routing-reference');
  if (!existsSync(join(dir, 'reference.json'))) return [];
  const reference = JSON.parse(readFileSync(join(dir, 'reference.json'), 'utf8')) as Record<
    string,
    Omit<ReferenceInstance, 'name' | 'input'>
  >;
  return readdirSync(join(dir, 'instances'))
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const name = file.replace(/\.json$/, '');
      const input = JSON.parse(readFileSync(join(dir, 'instances', file), 'utf8')) as RouteSuggestionInput;
      return { name, input, ...reference[name]! };
    });
}

const clock = (m: number): string =>
  `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

export type Kind = {
  /** u = uniform over a ~30 × 30 km city; solR / solC / solRC = random, clustered, mixed. */
  layout: 'u' | 'solR' | 'solC' | 'solRC';
  n: number;
  vehicles: number;
  service: [number, number];
  /** Share of targets with one window; windowMinutes its length range. */
  windowShare: number;
  windowMinutes: [number, number];
  maxStopsPerRoute?: number;
};

/** One instance of a kind: Berlin, 07:00–19:00, like the reference set. */
export function seededInstance(kind: Kind, seed: number): RouteSuggestionInput {
  const rnd = mulberry32(seed);
  const depot = { lat: 52.52, lon: 13.405 };
  const kmLat = 1 / 111.2;
  const kmLon = 1 / (111.2 * Math.cos((depot.lat * Math.PI) / 180));
  const clusters = Array.from({ length: 8 }, () => [(rnd() * 2 - 1) * 12, (rnd() * 2 - 1) * 12] as const);
  const point = (i: number): [number, number] => {
    const clustered = kind.layout === 'solC' || (kind.layout === 'solRC' && i % 2 === 0);
    if (!clustered) return [(rnd() * 2 - 1) * 15, (rnd() * 2 - 1) * 15];
    const [cx, cy] = clusters[Math.floor(rnd() * clusters.length)]!;
    // Roughly normal spread of ~1.5 km around the cluster centre.
    const g = (): number => (rnd() + rnd() + rnd() - 1.5) * 2;
    return [cx + g() * 1.5, cy + g() * 1.5];
  };
  const [minService, maxService] = kind.service;
  const [minWindow, maxWindow] = kind.windowMinutes;
  return {
    depot,
    date: '2025-06-02',
    vehicles: kind.vehicles,
    shift: { start: '07:00', end: '19:00' },
    ...(kind.maxStopsPerRoute ? { maxStopsPerRoute: kind.maxStopsPerRoute } : {}),
    targets: Array.from({ length: kind.n }, (_, i) => {
      const [x, y] = point(i);
      const serviceMinutes = minService + Math.floor(rnd() * (maxService - minService + 1));
      const timeWindows: TimeWindow[] = [];
      if (rnd() < kind.windowShare) {
        const length = minWindow + 15 * Math.floor((rnd() * (maxWindow - minWindow + 15)) / 15);
        const start = 7 * 60 + 30 + 15 * Math.floor((rnd() * (11 * 60 - 30 - length)) / 15);
        timeWindows.push({ start: clock(start), end: clock(start + length) });
      }
      return {
        externalId: `T${i + 1}`,
        lat: depot.lat + y * kmLat,
        lon: depot.lon + x * kmLon,
        serviceMinutes,
        timeWindows,
      };
    }),
  };
}

/** The reference set's kinds, plus clustered / mixed Solomon-like days and an overloaded one. */
export const seededKinds: { name: string; kind: Kind }[] = [
  {
    name: 'u050-nowin-v5',
    kind: { layout: 'u', n: 50, vehicles: 5, service: [5, 10], windowShare: 0, windowMinutes: [0, 0] },
  },
  {
    name: 'u100-tw30-v5',
    kind: { layout: 'u', n: 100, vehicles: 5, service: [10, 25], windowShare: 0.3, windowMinutes: [120, 240] },
  },
  {
    name: 'solR-100-v10-tw60-120',
    kind: { layout: 'solR', n: 100, vehicles: 10, service: [10, 10], windowShare: 1, windowMinutes: [60, 120] },
  },
  {
    name: 'solC-100-v10-tw60',
    kind: { layout: 'solC', n: 100, vehicles: 10, service: [10, 10], windowShare: 1, windowMinutes: [60, 60] },
  },
  {
    name: 'solRC-100-v10-tw60-120',
    kind: { layout: 'solRC', n: 100, vehicles: 10, service: [10, 10], windowShare: 1, windowMinutes: [60, 120] },
  },
  {
    name: 'u200-nowin-v10-max25',
    kind: {
      layout: 'u',
      n: 200,
      vehicles: 10,
      service: [5, 10],
      windowShare: 0,
      windowMinutes: [0, 0],
      maxStopsPerRoute: 25,
    },
  },
  {
    name: 'u200-tw30-v5-overload',
    kind: { layout: 'u', n: 200, vehicles: 5, service: [10, 30], windowShare: 0.3, windowMinutes: [120, 240] },
  },
  {
    name: 'u500-tw30-v25',
    kind: { layout: 'u', n: 500, vehicles: 25, service: [10, 25], windowShare: 0.3, windowMinutes: [120, 240] },
  },
  {
    name: 'u1000-tw30-v40',
    kind: { layout: 'u', n: 1000, vehicles: 40, service: [5, 15], windowShare: 0.3, windowMinutes: [120, 240] },
  },
];
