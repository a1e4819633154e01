// `npm run bench:prepare-batch`: the gateway's batch parse path (prepareBatch) alone, on the
// bodies bench:inbound sends, split by step: CPU ms per 1,000 targets of each step, and of the
// whole prepareBatch, with a bare baseline measured in the same run (JSON.parse of the same bytes,
// the least any parse path can cost). Each step runs on every body in turn, its inputs made
// before its clock starts; rounds alternate the steps and the median and spread (min–max) of the
// rounds are printed. No broker, no database. Asserts nothing.
//
// Beside the steps, what the other hand-over would cost: the accepted targets as JSON lines (the
// gateway's side) and COPY rows made from them (the workers' side).
//
// Options (env): BENCH_BATCHES (40 bodies), BENCH_BATCH_SIZE (1000 targets each), BENCH_ROUNDS (7).
import { createHash } from 'node:crypto';
import { checkJsonShape } from '../src/gateway/http/json-shape.js';
import { findUnstorableText } from '../src/gateway/http/storable.js';
import { parseOrThrow } from '../src/gateway/http/validate.js';
import { targetRow } from '../src/gateway/inbound/chunk-rows.js';
import { cutIntoChunks } from '../src/gateway/inbound/chunks.js';
import { prepareBatch } from '../src/gateway/inbound/prepare-batch.js';
import { batchEnvelopeSchema } from '../src/gateway/inbound/schemas.js';
import { validateTargets } from '../src/gateway/inbound/validate-targets.js';
import { loadConfig } from '../src/shared/config.js';
import { batchBody, batchTargets } from './lib/batches.js';
import { envInt } from './lib/env.js';
import { round } from './lib/stats.js';

const batches = envInt('BENCH_BATCHES', 40);
const batchSize = envInt('BENCH_BATCH_SIZE', 1000);
const rounds = envInt('BENCH_ROUNDS', 7);
const { inbound } = loadConfig({ ...process.env, DATABASE_URL: 'postgres://unused', KAFKA_BROKERS: 'unused:9092' });
const limits = { maxTargets: inbound.batchMaxTargets, chunkMaxBytes: inbound.chunkMaxBytes };

const bodies = Array.from({ length: batches }, (_, i) =>
  batchBody(`bench-${i}`, JSON.stringify(batchTargets('micro', 'a-', i, batchSize))),
);
const decoder = new TextDecoder('utf-8', { fatal: true });
const texts = bodies.map((b) => decoder.decode(b));
const values = texts.map((t) => JSON.parse(t) as { targets: unknown[] });
const validated = values.map((v) => validateTargets(v.targets));
const jsonLines = (accepted: (typeof validated)[number]['accepted']) =>
  Buffer.from(accepted.map((a) => JSON.stringify(a.target)).join('\n'));
const handedOver = validated.map((v) => jsonLines(v.accepted));

/** Each step over every body; what it returns is kept so no work is optimised away. */
const steps: Record<string, () => unknown[]> = {
  decode: () => bodies.map((b) => decoder.decode(b)),
  'shape scan': () => texts.map((t) => checkJsonShape(t)),
  'JSON.parse': () => texts.map((t) => JSON.parse(t) as unknown),
  // Only run when the shape scan saw a \u0000 or surrogate escape; bench bodies have none, so this
  // is what a body with one would cost.
  'unstorable-text scan': () => values.map((v) => findUnstorableText(v)),
  'envelope schema': () => values.map((v) => parseOrThrow(batchEnvelopeSchema, v, 'body')),
  'per-target check': () => values.map((v) => validateTargets(v.targets)),
  'per-target zod only': () => values.map((v) => validateTargets(v.targets, new Map(), () => undefined)),
  fingerprint: () => bodies.map((b) => createHash('sha256').update(b).digest()),
  'COPY rows + chunks': () => validated.map((v) => cutIntoChunks(v.accepted, limits.chunkMaxBytes)),
  // What rows made of the body's own bytes could save at most: the jsonb columns' JSON.stringify.
  'of which jsonb columns': () =>
    validated.map((v) => {
      let n = 0;
      for (const { target: t } of v.accepted)
        n +=
          JSON.stringify(t.address).length + JSON.stringify(t.timeWindows).length + JSON.stringify(t.metadata).length;
      return n;
    }),
  // The other way to hand over (not built): the gateway sends the accepted targets as JSON lines
  // and the workers make the COPY rows, which costs them a parse of each line on top of the rows.
  'hand-over as JSON lines': () => validated.map((v) => jsonLines(v.accepted)),
  'workers: JSON lines to rows': () =>
    handedOver.map((b) =>
      b
        .toString()
        .split('\n')
        .map((line, i) => targetRow(i, JSON.parse(line))),
    ),
  'prepareBatch (whole)': () => bodies.map((b) => prepareBatch(b, limits)),
  'bare: JSON.parse(bytes)': () => bodies.map((b) => JSON.parse(b.toString()) as unknown),
};
const inWhole = [
  'decode',
  'shape scan',
  'JSON.parse',
  'envelope schema',
  'per-target check',
  'fingerprint',
  'COPY rows + chunks',
];

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const perStep: Record<string, number[]> = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
const names = Object.keys(steps);
let sink = 0;
for (let r = -1; r < rounds; r++) {
  // Alternate the order each round, so no step always runs after the same one; round -1 warms up.
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const name of order) {
    const t0 = cpuMs();
    sink += steps[name]!().length;
    const ms = cpuMs() - t0;
    if (r >= 0) perStep[name]!.push((ms * 1000) / (batches * batchSize));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const bare = median(perStep['bare: JSON.parse(bytes)']!);
console.log(
  `\nprepareBatch by step, ${batches} bodies × ${batchSize} targets (${round(bodies[0]!.length / 1024, 0)} KiB each), ` +
    `${rounds} rounds; CPU ms per 1,000 targets, median (min–max)\n`,
);
const rows = names.map((name) => {
  const xs = perStep[name]!;
  const m = median(xs);
  return [
    name,
    round(m, 2).toFixed(2),
    `(${round(Math.min(...xs), 2).toFixed(2)}–${round(Math.max(...xs), 2).toFixed(2)})`,
    `${(m / bare).toFixed(2)} × bare`,
  ];
});
const width = Math.max(...rows.map((r) => r[0]!.length));
for (const r of rows) console.log(`${r[0]!.padEnd(width)}  ${r[1]!.padStart(6)}  ${r[2]!.padEnd(13)}  ${r[3]}`);
const sumOfSteps = inWhole.reduce((s, n) => s + median(perStep[n]!), 0);
console.log(`\nsum of the steps prepareBatch takes: ${sumOfSteps.toFixed(2)} ms (${sink > 0 ? 'done' : ''})`);
