// Bodies of POST /api/v1/inbound/targets/batch, valid and hostile, for the regression corpus
// (test/unit/prepare-batch-corpus.test.ts): whatever the gateway's parse path becomes, each of
// these must get the answer recorded for it. Deterministic: the same bodies every run.
import { makeTargets } from './targets.js';
import { mulberry32 } from './prng.js';

export type CorpusCase = { name: string; body: Buffer };

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const batch = (targets: unknown, extra: Record<string, unknown> = {}) =>
  json({ sourceSystem: 'corpus', ...extra, targets });
const raw = (text: string) => Buffer.from(text);
const t = (n = 3, prefix = 'c') => makeTargets(n, prefix) as Record<string, unknown>[];
const one = (patch: Record<string, unknown>, prefix = 'p') => ({ ...t(1, prefix)[0], ...patch });
const withAddress = (patch: Record<string, unknown>) =>
  one({ address: { line1: 'Hauptstraße 1', city: 'Berlin', countryCode: 'DE', ...patch } });

/** A valid target first (so the batch answers 200), then each item in turn: its per-target errors. */
const afterValid = (items: unknown[]) => batch([t(1, 'ok')[0], ...items]);

/** Values near every rule's edge, for generated targets. */
const edgeValues: unknown[] = [
  null,
  true,
  0,
  -0,
  1,
  5,
  6,
  2.5,
  -1,
  1440,
  1441,
  90.0001,
  -180,
  1e308,
  '',
  ' ',
  ' padded ',
  'x'.repeat(101),
  'y'.repeat(201),
  '😀'.repeat(60),
  'a\tb\nc\\d"e',
  [],
  {},
  [1],
  { a: 1 },
  ['t'],
  ['x'.repeat(51)],
  Array.from({ length: 21 }, (_, i) => `t${i}`),
  '2026-11-23T08:00:00Z',
  '2026-11-23T08:00:00+16:00',
  [{ start: '2026-11-23T08:00:00Z', end: '2026-11-23T07:00:00Z' }],
  [{ start: '0001-01-01T00:00:00+01:00', end: '2026-11-23T07:00:00Z' }],
  [{ end: '2026-11-23T09:00:00Z', start: '2026-11-23T08:00:00.123Z' }],
  { line1: 'L', city: 'C', countryCode: 'de' },
  { line1: ' L ', city: 'C', countryCode: 'DE', postalCode: null },
  { latitude: 91, longitude: 0 },
  { longitude: 13, latitude: 52 },
  { latitude: 52 },
  Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i])),
  { constructor: 1 },
  { __proto__: 1 },
];
const fields = [
  'externalId',
  'name',
  'address',
  'coordinates',
  'timeWindows',
  'serviceDurationMinutes',
  'priority',
  'tags',
  'metadata',
  'extra',
  'constructor',
];

/** Targets each with one or two fields set to an edge value (or removed): a seeded property corpus. */
function generatedTargets(count: number, seed: number): unknown[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  return makeTargets(count, `g${seed}`, seed).map((target: Record<string, unknown>) => {
    for (let i = 0; i < 1 + Math.floor(rnd() * 2); i++) {
      const field = pick(fields);
      if (rnd() < 0.15) delete target[field];
      else target[field] = pick(edgeValues);
    }
    return target;
  });
}

function invalidUtf8(): Buffer {
  const bytes = Buffer.from(
    JSON.stringify({ sourceSystem: 'corpus', targets: t(2) }).replace('Customer', 'Cust\u00ffomer'),
  );
  bytes[bytes.indexOf(0xc3)] = 0xff;
  return bytes;
}

export function batchCorpus(maxTargets: number): CorpusCase[] {
  const cases: [string, Buffer][] = [
    // valid
    ['valid: three targets', batch(t(3))],
    ['valid: externalBatchId, trimmed', batch(t(2), { externalBatchId: '  b-1  ' })],
    ['valid: externalBatchId null', batch(t(2), { externalBatchId: null })],
    ['valid: 1,000 bench targets (parse thread)', batch(t(1000, 'bench'), { externalBatchId: 'bench-0' })],
    ['valid: 3,000 targets in several chunks', batch(t(3000, 'many'))],
    [
      'valid: text to trim everywhere',
      batch([
        one({
          externalId: ' e ',
          name: '\tN\n',
          tags: [' a ', 'b '],
          address: { line1: ' L1 ', line2: null, city: ' C ', countryCode: 'DE' },
        }),
      ]),
    ],
    [
      'valid: coordinates only, address only, nulls',
      batch([
        one({ address: null }),
        one({ coordinates: null }),
        one({
          address: undefined,
          timeWindows: null,
          tags: null,
          metadata: null,
          priority: null,
          serviceDurationMinutes: null,
        }),
      ]),
    ],
    [
      'valid: COPY specials in every text',
      batch([
        one({
          name: 'a\\b\tc\nd\re',
          tags: ['q"uote', 'back\\slash', 'tab\t', 'NULL', '{x,y}'],
          metadata: { 'k\\': 'v\n\t"', n: -0, big: 1e21, small: 1e-7, b: false, z: null },
          address: { line1: 'Line "1" \\ x', city: 'Zürich', countryCode: 'CH' },
        }),
      ]),
    ],
    [
      'valid: surrogate pairs and escapes',
      raw(
        '{"sourceSystem":"c","targets":[{"externalId":"\\ud83d\\ude00","name":"\\u00e4\\/x",' +
          '"coordinates":{"latitude":1E1,"longitude":-0.0}}]}',
      ),
    ],
    [
      'valid: key order and duplicate keys',
      raw(
        '{"targets":[{"name":"first","coordinates":{"longitude":2,"latitude":1},' +
          '"name":"second","externalId":"d"}],"sourceSystem":"c","sourceSystem":"c2"}',
      ),
    ],
    [
      'edge: time windows at the edges',
      batch([
        one({
          timeWindows: [
            { start: '0001-01-01T00:00:00Z', end: '9999-12-31T23:59:59.999Z' },
            { end: '2026-11-23T09:00:00+15:59', start: '2026-11-23T08:00:00-15:59' },
          ],
        }),
      ]),
    ],
    ['valid: duplicate externalIds', batch([one({}, 'dup'), one({ name: 'later' }, 'dup')])],
    [
      'edge: metadata at its limits',
      batch([
        one({
          metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`.padEnd(64, 'x'), 'v'.repeat(70)])),
        }),
      ]),
    ],
    // per-target errors (200 with errors)
    ['errors: wrong types', afterValid([null, 1, 'x', [], true, {}, { externalId: 1, name: 2, coordinates: 'here' }])],
    [
      'errors: missing fields and place',
      afterValid([
        one({ externalId: undefined }),
        one({ name: undefined }),
        one({ address: null, coordinates: null }),
        one({ address: undefined, coordinates: undefined }),
      ]),
    ],
    [
      'errors: over-long and empty strings',
      afterValid([
        one({ externalId: 'x'.repeat(101) }),
        one({ name: 'y'.repeat(201) }),
        one({ name: '   ' }),
        one({ tags: ['z'.repeat(51)] }),
        one({ externalId: '' }),
      ]),
    ],
    [
      'errors: numbers out of range',
      afterValid([
        one({ priority: 6 }),
        one({ priority: 2.5 }),
        one({ serviceDurationMinutes: 1441 }),
        one({ serviceDurationMinutes: -1 }),
        one({ coordinates: { latitude: 90.5, longitude: 0 } }),
        one({ coordinates: { latitude: 0, longitude: 181, altitude: 3 } }),
      ]),
    ],
    [
      'errors: address and time windows',
      afterValid([
        withAddress({ countryCode: 'deu' }),
        withAddress({ line1: '' }),
        withAddress({ floor: 3 }),
        one({ timeWindows: [{ start: 'tomorrow', end: 'later' }] }),
        one({ timeWindows: [{ start: '2026-11-23T09:00:00Z', end: '2026-11-23T08:00:00Z' }] }),
        one({
          timeWindows: Array.from({ length: 11 }, () => ({
            start: '2026-11-23T08:00:00Z',
            end: '2026-11-23T09:00:00Z',
          })),
        }),
        one({ timeWindows: [{ start: '0000-12-31T23:00:00Z', end: '2026-11-23T09:00:00Z' }] }),
        one({ timeWindows: [{ start: '2026-11-23T08:00:00+16:00', end: '2026-11-23T09:00:00Z' }] }),
      ]),
    ],
    [
      'errors: tags and metadata',
      afterValid([
        one({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }),
        one({ tags: 'x' }),
        one({ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }),
        one({ metadata: { nested: { a: 1 } } }),
        one({ metadata: { ['k'.repeat(65)]: 1 } }),
        one({ metadata: { s: 'x'.repeat(600) } }),
        one({ metadata: { list: [1, 2] } }),
        one({ metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v'.repeat(400)])) }),
      ]),
    ],
    [
      'errors: odd key names',
      raw(
        '{"sourceSystem":"c","targets":[' +
          JSON.stringify(t(1, 'ok')[0]) +
          ',{"externalId":"a","name":"b","coordinates":{"latitude":1,"longitude":2},"__proto__":1}' +
          ',{"externalId":"a","name":"b","coordinates":{"latitude":1,"longitude":2},"constructor":1,"toString":2}' +
          ',{"externalId":"a","name":"b","address":{"line1":"l","city":"c","countryCode":"DE","hasOwnProperty":1}}' +
          ',{"externalId":"a","name":"b","coordinates":{"latitude":1,"longitude":2},"metadata":{"__proto__":1}}' +
          ',{"externalId":"a","name":"b","coordinates":{"latitude":1,"longitude":2},"metadata":{"":1}}]}',
      ),
    ],
    [
      'errors: unstorable text in targets',
      raw(
        JSON.stringify({ sourceSystem: 'c', targets: t(5, 'u') })
          .replace('"Customer site u-1"', '"n\\ud800"')
          .replace('"Hauptstraße 3"', '"x\\u0000"')
          .replace('"inspection"', '"\\udfff"')
          .replace('"C-1004"', '"a\\u0000"'),
      ),
    ],
    [
      'errors: unstorable key names in targets',
      raw(
        `{"sourceSystem":"c","targets":[${JSON.stringify(t(1, 'ok')[0])},` +
          '{"externalId":"\\ud800x","name":"n","coordinates":{"latitude":1,"longitude":2},"metadata":{"\\ud800":1}},' +
          '{"externalId":"e","name":"n","coordinates":{"latitude":1,"longitude":2},"x\\u0000y":1},' +
          '{"externalId":"e","name":"n","address":{"line1":"l","city":"c","countryCode":"DE","z\\udfff":"a"}}]}',
      ),
    ],
    [
      'errors: more than 100 item errors',
      afterValid(Array.from({ length: 150 }, (_, i) => ({ externalId: `e${i}`, tags: 1 }))),
    ],
    ['errors: generated targets, seed 1', batch(generatedTargets(400, 1))],
    ['errors: generated targets, seed 2', batch([...t(1, 'ok'), ...generatedTargets(400, 2)])],
    // whole-body 400s
    ['400: no target valid', batch([{}, { name: 1 }, null])],
    ['400: no target valid, more than 100 fields', batch(Array.from({ length: 120 }, () => ({})))],
    [
      '400: only unstorable targets',
      raw(
        '{"sourceSystem":"c","targets":[{"externalId":"\\u0000","name":"n","coordinates":{"latitude":1,"longitude":2}}]}',
      ),
    ],
    ['400: empty targets', batch([])],
    ['400: targets not an array', json({ sourceSystem: 'c', targets: { 0: t(1)[0] } })],
    ['400: missing sourceSystem', json({ targets: t(1) })],
    ['400: sourceSystem wrong type', json({ sourceSystem: 7, targets: t(1) })],
    ['400: sourceSystem blank', json({ sourceSystem: '  ', targets: t(1) })],
    ['400: sourceSystem too long', json({ sourceSystem: 's'.repeat(101), targets: t(1) })],
    ['400: externalBatchId empty', batch(t(1), { externalBatchId: '' })],
    ['400: externalBatchId too long', batch(t(1), { externalBatchId: 'b'.repeat(201) })],
    ['400: unknown top-level field', batch(t(1), { extra: 1 })],
    ['400: top-level __proto__', raw(`{"sourceSystem":"c","targets":${JSON.stringify(t(1))},"__proto__":1}`)],
    ['400: top-level constructor', raw(`{"sourceSystem":"c","targets":${JSON.stringify(t(1))},"constructor":1}`)],
    ['400: lone surrogate in sourceSystem', raw(`{"sourceSystem":"\\ud800","targets":${JSON.stringify(t(1))}}`)],
    [
      '400: NUL in externalBatchId',
      raw(`{"sourceSystem":"c","externalBatchId":"a\\u0000","targets":${JSON.stringify(t(1))}}`),
    ],
    ['400: unstorable top-level key', raw(`{"sourceSystem":"c","targets":${JSON.stringify(t(1))},"\\ud800":1}`)],
    ['400: body is null', raw('null')],
    ['400: body is an array', raw('[]')],
    ['400: body is a number', raw('123')],
    ['400: body is a string', raw('"text"')],
    ['400: empty body', raw('')],
    ['400: whitespace body', raw(' \n\t ')],
    ['400: invalid JSON', raw('{"sourceSystem":"c","targets":[{]}')],
    ['400: truncated JSON', raw(`{"sourceSystem":"c","targets":${JSON.stringify(t(2))}`.slice(0, -20))],
    ['400: trailing garbage', raw(`${batch(t(1)).toString()}x`)],
    ['edge: byte order mark (TextDecoder drops it)', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), batch(t(1))])],
    ['400: invalid UTF-8', invalidUtf8()],
    [
      '400: overlong UTF-8 sequence',
      Buffer.concat([raw('{"sourceSystem":"'), Buffer.from([0xc0, 0xaf]), raw('","targets":[]}')]),
    ],
    [
      '400: deep nesting in a target',
      raw(`{"sourceSystem":"c","targets":[{"metadata":${'['.repeat(40)}${']'.repeat(40)}}]}`),
    ],
    ['400: deep nesting at the top', raw(`${'['.repeat(5000)}${']'.repeat(5000)}`)],
    [
      '400: an object with too many keys',
      raw(
        `{"sourceSystem":"c","targets":[${JSON.stringify(
          Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i])),
        )}]}`,
      ),
    ],
    [
      '400: number out of double range',
      raw(
        '{"sourceSystem":"c","targets":[{"externalId":"e","name":"n","coordinates":{"latitude":1e400,"longitude":1}}]}',
      ),
    ],
    // 413
    [
      '413: one target too many',
      raw(
        `{"sourceSystem":"c","targets":[${Array(maxTargets + 1)
          .fill('1')
          .join(',')}]}`,
      ),
    ],
    [
      '413: too many before an invalid envelope',
      raw(
        `{"targets":[${Array(maxTargets + 1)
          .fill('{}')
          .join(',')}],"x":1}`,
      ),
    ],
  ];
  return cases.map(([name, body]) => ({ name, body }));
}
