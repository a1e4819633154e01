import { describe, expect, it } from 'vitest';
import { checkTarget } from '../../src/gateway/inbound/target-check.js';
import { targetItemSchema } from '../../src/shared/inbound/target-schema.js';
import { mulberry32 } from '../support/prng.js';

// The hand-written target check must never accept what targetItemSchema refuses, and must give
// the same output for what it accepts; it should take the fast path for nearly all valid targets.
// Generated: valid targets of every shape, and each mutated with values near every rule's edge.
const rnd = mulberry32(20261124);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const maybe = (p = 0.5) => rnd() < p;

const strings = [
  'x',
  ' padded ',
  '',
  '   ',
  '\t\n',
  'ä'.repeat(50),
  'y'.repeat(20),
  'z'.repeat(21),
  'w'.repeat(100),
  'v'.repeat(101),
  'u'.repeat(200),
  't'.repeat(201),
  ' '.repeat(3) + 's'.repeat(100) + ' ',
  '\u00a0nbsp\u00a0',
  '😀'.repeat(30),
];
const instants = [
  '2026-11-23T08:00:00+01:00',
  '2026-11-23T12:00:00Z',
  '2026-11-23T12:00:00.123Z',
  '2026-11-23T12:00:00',
  '2026-02-30T12:00:00Z',
  '2024-02-29T12:00:00Z',
  '2023-02-29T12:00:00Z',
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00+01:00',
  '0001-01-01T00:00:00Z',
  '0000-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59-01:00',
  '9999-12-31T23:59:59.9999Z',
  '2026-11-23T08:00:00-16:00',
  '2026-11-23T08:00:00+16:00',
  '2026-11-23T08:00:00+15:59',
  '2026-11-23T08:00:00+0100',
  '2026-11-23 08:00:00Z',
  'tomorrow',
];
const numbers = [0, 1, 3, 5, 6, -1, 1440, 1441, 2.5, -90, 90, 90.0001, -180, 180, 180.5, 1e308, -0, 12.25];
const anything = () => pick<unknown>([null, true, 'text', 7, [], {}, [1], { a: 1 }, ...strings, ...numbers]);

function validTarget(): Record<string, unknown> {
  const t: Record<string, unknown> = { externalId: `ext-${Math.floor(rnd() * 1e6)}`, name: 'Site' };
  const place = pick(['address', 'coordinates', 'both']);
  if (place !== 'coordinates')
    t.address = {
      line1: 'Hauptstraße 1',
      city: 'Berlin',
      countryCode: 'DE',
      ...(maybe() ? { line2: maybe() ? null : 'Hinterhaus' } : {}),
      ...(maybe() ? { postalCode: maybe() ? null : '10115' } : {}),
      ...(maybe() ? { region: maybe() ? null : 'BE' } : {}),
    };
  else if (maybe(0.2)) t.address = null;
  if (place !== 'address') t.coordinates = { latitude: 52.5, longitude: 13.4 };
  else if (maybe(0.2)) t.coordinates = null;
  if (maybe())
    t.timeWindows = maybe(0.2)
      ? null
      : maybe(0.3)
        ? []
        : [{ start: '2026-11-23T08:00:00+01:00', end: '2026-11-23T12:00:00Z' }];
  if (maybe()) t.serviceDurationMinutes = maybe(0.2) ? null : 15;
  if (maybe()) t.priority = maybe(0.2) ? null : 4;
  if (maybe()) t.tags = maybe(0.2) ? null : ['inspection', ' padded '];
  if (maybe()) t.metadata = maybe(0.2) ? null : { contract: 'C-1', floor: 3, vip: true, note: null };
  return t;
}

/** One change near a rule's edge (often still valid). */
function mutate(t: Record<string, unknown>): unknown {
  const address = (t.address ?? { line1: 'a', city: 'b', countryCode: 'DE' }) as Record<string, unknown>;
  switch (Math.floor(rnd() * 16)) {
    case 0:
      return { ...t, externalId: pick(strings) };
    case 1:
      return { ...t, name: maybe(0.8) ? pick(strings) : anything() };
    case 2:
      return {
        ...t,
        address: {
          ...address,
          [pick(['line1', 'line2', 'postalCode', 'city', 'region'])]: maybe(0.8) ? pick(strings) : anything(),
        },
      };
    case 3:
      return { ...t, address: { ...address, countryCode: pick(['DE', 'de', 'DEU', 'D', ' DE', 7, null]) } };
    case 4:
      return {
        ...t,
        coordinates: {
          latitude: pick<unknown>([...numbers, '52', null]),
          longitude: pick<unknown>([...numbers, '13']),
        },
      };
    case 5:
      return {
        ...t,
        timeWindows: Array.from({ length: pick([0, 1, 2, 10, 11]) }, () => ({
          start: pick(instants),
          end: pick(instants),
        })),
      };
    case 6:
      return { ...t, serviceDurationMinutes: pick<unknown>([...numbers, '15', null]) };
    case 7:
      return { ...t, priority: pick<unknown>([...numbers, '3', null]) };
    case 8:
      return {
        ...t,
        tags: Array.from({ length: pick([0, 1, 20, 21]) }, () =>
          maybe(0.9) ? pick(strings).slice(0, 60) : anything(),
        ),
      };
    case 9: {
      const keys = pick([1, 50, 51]);
      return {
        ...t,
        metadata: Object.fromEntries(
          Array.from({ length: keys }, (_, i) => [
            maybe(0.95) ? `k${i}` : pick(['', 'q'.repeat(101), 'q'.repeat(100)]),
            maybe(0.9) ? pick<unknown>(['v', 1, false, null, 'x'.repeat(1000), 'x'.repeat(1001)]) : anything(),
          ]),
        ),
      };
    }
    case 10:
      return {
        ...t,
        metadata: {
          big: 'x'.repeat(990),
          more: 'y'.repeat(990),
          again: 'z'.repeat(990),
          last: 'w'.repeat(990),
          end: 'v'.repeat(pick([1, 200])),
        },
      };
    case 11:
      return { ...t, [pick(['sourceSystem', 'extra', 'constructor', 'toString'])]: 1 };
    case 12: {
      const copy = { ...t };
      delete copy[pick(['externalId', 'name', 'address', 'coordinates'])];
      return copy;
    }
    case 13:
      return { ...t, address: null, coordinates: null };
    case 14:
      return pick<unknown>([null, [], 'target', 1, [t]]);
    default:
      return { ...t, [pick(['address', 'coordinates', 'timeWindows', 'tags', 'metadata'])]: anything() };
  }
}

describe('checkTarget', () => {
  it('accepts only what targetItemSchema accepts, with the same output, and nearly all valid targets', () => {
    let valid = 0;
    let fast = 0;
    let asSent = 0;
    const disagreements: unknown[] = [];
    for (let i = 0; i < 20_000; i++) {
      const target = i % 4 === 0 ? validTarget() : mutate(validTarget());
      const zod = targetItemSchema.safeParse(target);
      const checked = checkTarget(target);
      if (zod.success) valid++;
      if (checked === undefined) continue;
      fast++;
      if (checked === target) asSent++;
      if (!zod.success || JSON.stringify(sorted(checked)) !== JSON.stringify(sorted(zod.data)))
        disagreements.push(target);
    }
    expect(disagreements.slice(0, 5)).toEqual([]);
    // Most are accepted as sent: the check returns the object given, copying nothing.
    expect(asSent, 'targets accepted as sent').toBeGreaterThan(fast / 2);
    expect(valid, 'valid targets generated').toBeGreaterThan(5000);
    expect(fast / valid, 'share of valid targets the fast check takes').toBeGreaterThan(0.95);
  });

  it('gives zod the targets it is not sure of (a proto key in metadata)', () => {
    const target = JSON.parse(
      '{"externalId":"a","name":"b","coordinates":{"latitude":1,"longitude":2},"metadata":{"__proto__":1}}',
    );
    expect(checkTarget(target)).toBeUndefined();
  });
});

/** The value with object keys in sorted order (zod and the check may order keys differently). */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
    );
  return v;
}
