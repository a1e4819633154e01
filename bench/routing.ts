// `npm run bench:routing`: route suggestions against reference solvers and a baseline measured in
// the same run; prints tables, writes the rows to bench/results/routing.json, asserts nothing.
// 1. The reference instances (ROUTING_REFERENCE_DIR, else ../shared/routing-reference): targets
//    placed, routes, km and CPU seconds next to VROOM's and OR-Tools' figures, and the geometric
//    mean of our km over VROOM's.
// 2. Seeded instances of the same kinds (not tuned on): the same figures next to a run with 4×
//    the search budget (how far from converged the default budget stops) and the
//    nearest-neighbour dispatcher.
// 3. The caller's event-loop delay while the largest allowed draft (maxTargets targets ×
//    maxTimeWindows windows, as an import job gives them) is computed in the worker thread, its
//    answer's arrival included (the draft's document comes back as one JSON text).
// CPU time, not wall time: the machine is shared.
import { mkdirSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ImportedTarget } from '../src/routing/imported-draft.js';
import { nearestNeighbourRoutes } from '../src/routing/nearest-neighbour.js';
import { maxTargets } from '../src/routing/problem.js';
import { runRouteSuggestionInWorker } from '../src/routing/run-in-worker.js';
import { suggestRoutes } from '../src/routing/suggest.js';
import type { RouteSuggestionResult } from '../src/routing/types.js';
import { maxTimeWindows } from '../src/shared/inbound/target-schema.js';
import { mulberry32 } from '../test/support/prng.js';
import { referenceInstances, seededInstance, seededKinds, type SolverFigures } from './routing-instances.js';

function cpuTimed(fn: () => RouteSuggestionResult): [RouteSuggestionResult, number] {
  const before = process.cpuUsage();
  const result = fn();
  const used = process.cpuUsage(before);
  return [result, (used.user + used.system) / 1e6];
}

const figures = (r: RouteSuggestionResult): { placed: number; routes: number; km: number } => ({
  placed: r.routes.reduce((sum, route) => sum + route.stops.length, 0),
  routes: r.routes.filter((route) => route.stops.length > 0).length,
  km: Math.round(r.totalDistanceKm * 10) / 10,
});

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;
const geomean = (xs: number[]): number => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

function printTable(rows: Record<string, unknown>[]): void {
  if (rows.length === 0) return;
  const header = Object.keys(rows[0]!);
  const table = [header, ...rows.map((r) => header.map((h) => (r[h] === undefined ? '-' : String(r[h]))))];
  const widths = header.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  for (const row of table)
    console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
}

const solver = (s: SolverFigures | undefined): string => (s ? `${s.placed}/${s.routes}/${s.km}` : '-');

console.log('1. Reference instances: placed/routes/km; ours in CPU s, theirs in wall s (loaded machine)\n');
const reference = referenceInstances().map((ref) => {
  const [result, cpu] = cpuTimed(() => suggestRoutes(ref.input));
  const ours = figures(result);
  return {
    instance: ref.name,
    targets: ref.input.targets.length,
    ours: `${ours.placed}/${ours.routes}/${ours.km}`,
    'ours CPU s': round(cpu, 2),
    'ours min': result.totalDurationMinutes,
    vroom: solver(ref.vroom),
    'vroom min': ref.vroom.routeMinutes,
    'vroom s': ref.vroom.wallSeconds,
    'ortools 5s': solver(ref.ortools5),
    'ortools 30s': solver(ref.ortools30),
    'km/vroom': round(ours.km / ref.vroom.km, 4),
    'placed-vroom': ours.placed - ref.vroom.placed,
  };
});
if (reference.length === 0) console.log('(no reference set found: set ROUTING_REFERENCE_DIR)');
printTable(reference);
if (reference.length > 0) {
  const ratios = reference.map((r) => r['km/vroom']);
  console.log(`\ngeometric mean km/vroom ${round(geomean(ratios), 4)}, worst ${Math.max(...ratios)}`);
}

console.log('\n2. Seeded instances of the same kinds (3 seeds each): ours, ours with 4× budget, nearest neighbour\n');
const seeded = seededKinds.flatMap(({ name, kind }) =>
  [1, 2, 3].map((seed) => {
    const input = seededInstance(kind, seed * 1000 + kind.n);
    const [result, cpu] = cpuTimed(() => suggestRoutes(input));
    const [long, longCpu] = cpuTimed(() => suggestRoutes(input, { effort: 4 }));
    const ours = figures(result);
    const longer = figures(long);
    const nn = figures(nearestNeighbourRoutes(input));
    return {
      instance: `${name}#${seed}`,
      ours: `${ours.placed}/${ours.routes}/${ours.km}`,
      'ours CPU s': round(cpu, 2),
      '4× budget': `${longer.placed}/${longer.routes}/${longer.km}`,
      '4× CPU s': round(longCpu, 2),
      'km/4×': round(ours.km / longer.km, 4),
      nearestNeighbour: `${nn.placed}/${nn.routes}/${nn.km}`,
    };
  }),
);
printTable(seeded);
const sameWork = seeded.filter((r) => r.ours.split('/')[0] === r['4× budget'].split('/')[0]).map((r) => r['km/4×']);
console.log(`\ngeometric mean km/4× (where both place as many) ${round(geomean(sameWork), 4)}`);

const out = new URL('./results/', import.meta.url);
mkdirSync(out, { recursive: true });
writeFileSync(new URL('routing.json', out), `${JSON.stringify({ reference, seeded }, null, 2)}\n`);
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
    `${Math.round(performance.now() - started)} ms, ${largest.routable ? largest.placed : 0} placed, ` +
    `${largest.routable ? Math.round(largest.documentJson.length / 1000) : 0} kB of JSON; ` +
    `caller's event-loop delay p50 ${ms(delay.percentile(50))} ms, p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms`,
);
