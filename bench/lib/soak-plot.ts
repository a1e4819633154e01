// The plot of bench/soak.ts, as hand-written SVG (no dependency): two panels over the run's
// minutes, the pruned tables' total size (and each pruned table's) and the p99s of each interval,
// with the end of the first retention period marked.
import { percentiles } from './stats.js';
import type { Sample } from './soak-sample.js';

export type Series = { name: string; color: string; points: [number, number][]; dashed?: boolean };
type Panel = { title: string; unit: string; series: Series[] };

const width = 900;
const panelHeight = 300;
const margin = { left: 70, right: 200, top: 34, bottom: 40 };
const r2 = (n: number) => Math.round(n * 100) / 100;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A round step for about `ticks` ticks over [0, max]. */
function step(max: number, ticks = 5): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw || 1));
  return [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
}

function panel(p: Panel, top: number, xMax: number, marker: number): string {
  const plotW = width - margin.left - margin.right;
  const plotH = panelHeight - margin.top - margin.bottom;
  const values = p.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite);
  const yStep = step(Math.max(1e-9, ...values));
  const yMax = Math.ceil(Math.max(1e-9, ...values) / yStep) * yStep;
  const x = (v: number) => r2(margin.left + (v / xMax) * plotW);
  const y = (v: number) => r2(top + margin.top + plotH - (v / yMax) * plotH);
  const out: string[] = [];
  out.push(`<text x="${margin.left}" y="${top + 20}" font-size="15" font-weight="bold">${esc(p.title)}</text>`);
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    out.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${margin.left - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${round(v)}</text>`,
    );
  }
  const xStep = step(xMax, 8);
  for (let v = 0; v <= xMax + 1e-9; v += xStep)
    out.push(
      `<line x1="${x(v)}" x2="${x(v)}" y1="${top + margin.top + plotH}" y2="${top + margin.top + plotH + 4}" stroke="#333"/>`,
      `<text x="${x(v)}" y="${top + margin.top + plotH + 17}" font-size="11" text-anchor="middle">${round(v)}</text>`,
    );
  out.push(
    `<text x="${margin.left + plotW / 2}" y="${top + panelHeight - 6}" font-size="12" text-anchor="middle">minutes into the load</text>`,
    `<text x="16" y="${top + margin.top + plotH / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 16 ${top + margin.top + plotH / 2})">${esc(p.unit)}</text>`,
    `<rect x="${margin.left}" y="${top + margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
    `<line x1="${x(marker)}" x2="${x(marker)}" y1="${top + margin.top}" y2="${top + margin.top + plotH}" stroke="#999" stroke-dasharray="4 3"/>`,
    `<text x="${x(marker) + 4}" y="${top + margin.top + 12}" font-size="10" fill="#666">first retention period + prune interval</text>`,
  );
  p.series.forEach((s, i) => {
    const pts = s.points.filter(([, v]) => Number.isFinite(v));
    if (pts.length > 0)
      out.push(
        `<polyline fill="none" stroke="${s.color}" stroke-width="${s.dashed ? 1.2 : 2}"${s.dashed ? ' stroke-dasharray="5 3"' : ''} points="${pts.map(([a, b]) => `${round(x(a))},${round(y(b))}`).join(' ')}"/>`,
      );
    const ly = top + margin.top + 10 + i * 18;
    const lx = margin.left + plotW + 12;
    out.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
      `<text x="${lx + 28}" y="${ly + 4}" font-size="11">${esc(s.name)}</text>`,
    );
  });
  return out.join('\n');
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** Two panels (sizes, p99s) over the minutes of the run; `marker`: minutes at which retention is in force. */
export function soakSvg(title: string, sizes: Panel, latencies: Panel, xMaxMinutes: number, marker: number): string {
  const height = 2 * panelHeight + 40;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="22" font-size="16" text-anchor="middle">${esc(title)}</text>`,
    panel(sizes, 30, xMaxMinutes, marker),
    panel(latencies, 30 + panelHeight, xMaxMinutes, marker),
    '</svg>',
    '',
  ].join('\n');
}

const mib = (bytes: number) => bytes / 2 ** 20;
const p99 = (values: number[]) => percentiles(values).p99;

/**
 * bench/soak.ts's plot of its samples. The first interval (the processes warming up) is left out
 * of the p99 panel: its seconds would flatten the rest.
 */
export function soakPlot(
  samples: Sample[],
  o: { minutes: number; retentionMinutes: number; referenceMinutes: number; sampleSeconds: number; date: string },
): string {
  const at = (s: Sample) => s.t / 60;
  const measured = samples.filter((s) => s.t > o.sampleSeconds);
  const tables = [
    ['import_job_chunks', '#2ca02c'],
    ['import_jobs', '#9467bd'],
    ['webhook_attempts', '#8c564b'],
    ['webhook_deliveries', '#e377c2'],
    ['webhook_events', '#7f7f7f'],
  ] as const;
  return soakSvg(
    `bench:soak: ${o.minutes} min of mixed load, retention ${o.retentionMinutes} min (${o.date})`,
    {
      title: 'Size of the pruned tables (table + indexes)',
      unit: 'MiB',
      series: [
        { name: 'pruned tables, total', color: '#1f77b4', points: samples.map((s) => [at(s), mib(s.prunedBytes)]) },
        {
          name: 'pruned tables, without the free-space and visibility maps',
          color: '#17becf',
          points: samples.map((s) => [at(s), mib(s.prunedBytes - (s.prunedMapBytes ?? 0))]),
        },
        ...tables.map(([t, color]) => ({
          name: t,
          color,
          dashed: true,
          points: samples.map((s): [number, number] => [at(s), mib(s.tables[t]?.totalBytes ?? 0)]),
        })),
      ],
    },
    {
      title: `p99 per ${o.sampleSeconds} s interval (the first, warm-up, left out)`,
      unit: 'ms',
      series: [
        { name: 'apply p99, batch jobs', color: '#d62728', points: measured.map((s) => [at(s), p99(s.apply.Batch)]) },
        { name: 'apply p99, single', color: '#ff7f0e', points: measured.map((s) => [at(s), p99(s.apply.Single)]) },
        { name: 'read p99', color: '#1f77b4', points: measured.map((s) => [at(s), p99(s.reads)]) },
        { name: 'write p99', color: '#2ca02c', points: measured.map((s) => [at(s), p99(s.writes)]) },
      ],
    },
    o.minutes,
    o.referenceMinutes,
  );
}
