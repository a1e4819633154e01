// `npx tsx bench/routing.ts`: the route-suggestion heuristic against a nearest-neighbour
// dispatcher on random city-scale drafts (seeded, so every run sees the same instances).
// Prints a table and writes the rows to bench/results/routing.json; asserts nothing.
// When the shifts cannot hold all the work the two place different numbers of targets, so total
// km alone says little: the "NN stops only" column reruns the heuristic on exactly the targets
// the baseline placed (same work, distances comparable).
// Last, the caller's event-loop delay while the largest allowed draft (maxTargets targets ×
// maxTimeWindows windows, as an import job gives them) is computed in the worker thread.
import { mkdirSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { nearestNeighbourRoutes } from '../src/routing/nearest-neighbour.js';
import type { ImportedTarget } from '../src/routing/imported-draft.js';
import { maxTargets } from '../src/routing/problem.js';
import { runRouteSuggestionInWorker } from '../src/routing/run-in-worker.js';
import { maxTimeWindows } from '../src/shared/inbound/target-schema.js';
import { suggestRoutes } from '../src/routing/suggest.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from '../src/routing/types.js';
import { mulberry32 } from '../test/support/prng.js';

const clock = (m: number): string =>
  `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

type Scenario = {
  name: string;
  serviceMinutes: [number, number];
  windowShare: number;
  cases: [n: number, vehicles: number][];
};

const scenarios: Scenario[] = [
  // As the issue asks: more work than 12-hour shifts hold, so placed counts differ too.
  {
    name: 'issue',
    serviceMinutes: [10, 30],
    windowShare: 0.3,
    cases: [
      [200, 5],
      [1000, 10],
      [2000, 20],
    ],
  },
  // Enough vehicles for everything and no windows: both place all, distances compare directly.
  {
    name: 'all-fit',
    serviceMinutes: [5, 10],
    windowShare: 0,
    cases: [
      [200, 5],
      [1000, 15],
      [2000, 30],
    ],
  },
];

/** ~30×30 km around a depot, shift 07:00–19:00, some targets with one 2–4 h window. */
function instance(n: number, vehicles: number, scenario: Scenario, seed: number): RouteSuggestionInput {
  const rnd = mulberry32(seed);
  const depot = { lat: 52.52, lon: 13.405 };
  const dLat = 15 / 111.2;
  const dLon = 15 / (111.2 * Math.cos((depot.lat * Math.PI) / 180));
  const [minService, maxService] = scenario.serviceMinutes;
  return {
    depot,
    date: '2025-06-02',
    vehicles,
    shift: { start: '07:00', end: '19:00' },
    targets: Array.from({ length: n }, (_, i) => {
      const lat = depot.lat + (rnd() * 2 - 1) * dLat;
      const lon = depot.lon + (rnd() * 2 - 1) * dLon;
      const serviceMinutes = minService + Math.floor(rnd() * (maxService - minService + 1));
      let timeWindows: { start: string; end: string }[] = [];
      if (rnd() < scenario.windowShare) {
        const length = 120 + 30 * Math.floor(rnd() * 5);
        const start = 7 * 60 + 15 * Math.floor((rnd() * (12 * 60 - length)) / 15);
        timeWindows = [{ start: clock(start), end: clock(start + length) }];
      }
      return { externalId: `T${i + 1}`, lat, lon, serviceMinutes, timeWindows };
    }),
  };
}

function timed(fn: () => RouteSuggestionResult): [RouteSuggestionResult, number] {
  const t = performance.now();
  const result = fn();
  return [result, performance.now() - t];
}

const placed = (r: RouteSuggestionResult): number => r.routes.reduce((sum, route) => sum + route.stops.length, 0);

const rows = scenarios.flatMap((scenario) =>
  scenario.cases.map(([n, vehicles]) => {
    const input = instance(n, vehicles, scenario, 7 + n);
    const [heuristic, heuristicMs] = timed(() => suggestRoutes(input));
    const [nn, nnMs] = timed(() => nearestNeighbourRoutes(input));
    const perStop = (r: RouteSuggestionResult): number => Math.round((r.totalDistanceKm / placed(r)) * 1000) / 1000;
    // Same work: the heuristic given only the targets the baseline managed to place.
    const nnStops = new Set(nn.routes.flatMap((r) => r.stops.map((stop) => stop.externalId)));
    const sameWork = suggestRoutes({ ...input, targets: input.targets.filter((t) => nnStops.has(t.externalId)) });
    return {
      scenario: scenario.name,
      n,
      vehicles,
      heuristicKm: heuristic.totalDistanceKm,
      nearestNeighbourKm: nn.totalDistanceKm,
      ratio: Math.round((heuristic.totalDistanceKm / nn.totalDistanceKm) * 1000) / 1000,
      heuristicPlaced: placed(heuristic),
      nearestNeighbourPlaced: placed(nn),
      heuristicKmPerStop: perStop(heuristic),
      nearestNeighbourKmPerStop: perStop(nn),
      heuristicKmOnNearestNeighbourStops: sameWork.totalDistanceKm,
      heuristicPlacedOfNearestNeighbourStops: placed(sameWork),
      heuristicMs: Math.round(heuristicMs),
      nearestNeighbourMs: Math.round(nnMs),
    };
  }),
);

const header = [
  'scenario',
  'n',
  'vehicles',
  'heur km',
  'NN km',
  'heur/NN',
  'heur placed',
  'NN placed',
  'heur km/stop',
  'NN km/stop',
  'heur km, NN stops only',
  'placed of them',
  'heur ms',
  'NN ms',
];
const table = [header, ...rows.map((r) => Object.values(r).map(String))];
const widths = header.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
for (const row of table)
  console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));

const out = new URL('./results/', import.meta.url);
mkdirSync(out, { recursive: true });
writeFileSync(new URL('routing.json', out), `${JSON.stringify(rows, null, 2)}\n`);
console.log('\nrows written to bench/results/routing.json');

/** maxTargets targets with maxTimeWindows 40-minute windows each (instants, Berlin time). */
function largestImportedTargets(): string {
  const rnd = mulberry32(99);
  const targets: ImportedTarget[] = Array.from({ length: maxTargets }, (_, i) => ({
    externalId: `T${i + 1}`,
    lat: 52.4 + rnd() * 0.25,
    lon: 13.2 + rnd() * 0.4,
    serviceMinutes: 10,
    priority: null,
    timeWindows: Array.from({ length: maxTimeWindows }, (_, w) => {
      const start = Date.parse('2026-11-23T07:00:00Z') + (w * 60 + (i % 20)) * 60_000;
      return { start: new Date(start).toISOString(), end: new Date(start + 40 * 60_000).toISOString() };
    }),
  }));
  return JSON.stringify(targets);
}

const delay = monitorEventLoopDelay({ resolution: 1 });
const targetsJson = largestImportedTargets();
delay.enable();
const started = performance.now();
const largest = await runRouteSuggestionInWorker({
  depot: { lat: 52.5, lon: 13.4 },
  date: '2026-11-23',
  timeZone: 'Europe/Berlin',
  vehicles: 50,
  shift: { start: '07:00', end: '19:00' },
  targetsJson,
});
delay.disable();
const ms = (ns: number): string => (ns / 1e6).toFixed(1);
console.log(
  `\nlargest draft (${maxTargets} targets × ${maxTimeWindows} windows) in the worker: ` +
    `${Math.round(performance.now() - started)} ms, ${largest.routable ? largest.routes.reduce((n, r) => n + r.stops.length, 0) : 0} placed; ` +
    `caller's event-loop delay p50 ${ms(delay.percentile(50))} ms, p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms`,
);
