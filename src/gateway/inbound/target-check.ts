// A hand-written check of one batch target with the verdict and output of targetItemSchema
// (src/shared/inbound/target-schema.ts, whose limits it reads), for the gateway's hot path: zod per target was a quarter of the gateway's
// CPU on large batches. It only ever accepts: anything it is not sure of (an invalid target, an
// odd key) returns undefined and zod decides, and words the errors. zod stays the one source of
// the rules and of the OpenAPI document; test/unit/target-check.test.ts proves on generated valid
// and invalid targets that whatever this accepts, zod accepts with the same output.
import {
  addressTextLimits,
  maxMetadataBytes,
  maxMetadataKeyLength,
  maxMetadataKeys,
  maxMetadataStringLength,
  timeWindowSchema,
} from '../../shared/common-schemas.js';
import { maxTags, maxTimeWindows, targetLimits, type TargetFields } from '../../shared/inbound/target-schema.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * One pass over a target. A target accepted as sent is its own output, so the first pass only
 * checks (no copies, the common case); one with text to trim (`trimmed`, set by text()) is checked
 * again, building its output (checkTarget).
 */
type Pass = { building: boolean; trimmed: boolean };

/** text(max): trimmed, 1 … max UTF-16 units after trimming; undefined when not. */
function text(v: unknown, max: number, pass: Pass): string | undefined {
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  if (t.length !== v.length) pass.trimmed = true;
  return t.length >= 1 && t.length <= max ? t : undefined;
}

const intIn = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;
const numberIn = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;

const NOT_SURE = Symbol('not sure');
type Checked<T> = T | typeof NOT_SURE;

// Maps, not object literals: a key such as "constructor" must not find Object.prototype's.
const addressTexts = new Map(Object.entries(addressTextLimits));

function address(v: unknown, pass: Pass): Checked<Obj> {
  if (!isObject(v) || !('line1' in v) || !('city' in v) || !('countryCode' in v)) return NOT_SURE;
  const out: Obj | null = pass.building ? {} : null;
  for (const k of Object.keys(v)) {
    const x = v[k];
    if (k === 'countryCode') {
      if (typeof x !== 'string' || !/^[A-Z]{2}$/.test(x)) return NOT_SURE;
      if (out) out[k] = x;
      continue;
    }
    const rule = addressTexts.get(k);
    if (!rule) return NOT_SURE;
    if (x === null && !rule.required) {
      if (out) out[k] = null;
      continue;
    }
    const t = text(x, rule.max, pass);
    if (t === undefined) return NOT_SURE;
    if (out) out[k] = t;
  }
  return out ?? v;
}

function coordinates(v: unknown, pass: Pass): Checked<Obj> {
  if (!isObject(v)) return NOT_SURE;
  const keys = Object.keys(v);
  if (keys.length !== 2 || !('latitude' in v) || !('longitude' in v)) return NOT_SURE;
  if (!numberIn(v.latitude, -90, 90) || !numberIn(v.longitude, -180, 180)) return NOT_SURE;
  if (!pass.building) return v;
  return keys[0] === 'latitude'
    ? { latitude: v.latitude, longitude: v.longitude }
    : { longitude: v.longitude, latitude: v.latitude };
}

// The format zod itself checks instants against (z.iso.datetime({ offset: true })).
const instantPattern: RegExp = (() => {
  const pattern = (timeWindowSchema.shape.start as unknown as { _zod: { pattern?: unknown } })._zod.pattern;
  if (!(pattern instanceof RegExp))
    throw new Error('zod no longer exposes the instant pattern: update target-check.ts');
  return pattern;
})();

// instantInRange's verdict, parsing once: the UTC year 1 … 9999 is this range of epoch ms.
const minStoredMs = -62135596800000; // 0001-01-01T00:00:00Z
const maxStoredMs = 253402300799999; // 9999-12-31T23:59:59.999Z

/** An instant of instantPattern as epoch ms; NaN for an offset beyond ±15:59 (or a date Date cannot read). */
function storedInstant(v: string): number {
  const sign = v.charCodeAt(v.length - 6); // the pattern ends with Z or ±HH:MM
  if ((sign === 0x2b || sign === 0x2d) && Number(v.slice(-5, -3)) > 15) return NaN;
  return Date.parse(v);
}

function timeWindows(v: unknown, pass: Pass): Checked<Obj[]> {
  if (!Array.isArray(v) || v.length > maxTimeWindows) return NOT_SURE;
  const out: Obj[] | null = pass.building ? [] : null;
  for (const w of v) {
    if (!isObject(w) || Object.keys(w).length !== 2) return NOT_SURE;
    const { start, end } = w;
    if (typeof start !== 'string' || typeof end !== 'string') return NOT_SURE;
    if (!instantPattern.test(start) || !instantPattern.test(end)) return NOT_SURE;
    const from = storedInstant(start);
    const to = storedInstant(end);
    if (!(from >= minStoredMs && to <= maxStoredMs && to > from)) return NOT_SURE;
    out?.push(Object.keys(w)[0] === 'start' ? { start, end } : { end, start });
  }
  return out ?? (v as Obj[]);
}

function tags(v: unknown, pass: Pass): Checked<string[]> {
  if (!Array.isArray(v) || v.length > maxTags) return NOT_SURE;
  const out: string[] | null = pass.building ? [] : null;
  for (const tag of v) {
    const t = text(tag, targetLimits.tag, pass);
    if (t === undefined) return NOT_SURE;
    out?.push(t);
  }
  return out ?? (v as string[]);
}

function metadata(v: unknown, pass: Pass): Checked<Obj> {
  if (!isObject(v)) return NOT_SURE;
  const keys = Object.keys(v);
  if (keys.length > maxMetadataKeys) return NOT_SURE;
  const out: Obj | null = pass.building ? {} : null;
  // An upper bound of its JSON's UTF-8 bytes (a UTF-16 unit is at most 6 bytes, as a \u escape;
  // a number, true, false or null at most 25 characters): within the limit, the exact size need
  // not be computed.
  let boundBytes = 2;
  for (const k of keys) {
    if (k.length < 1 || k.length > maxMetadataKeyLength || k === '__proto__') return NOT_SURE;
    const x = v[k];
    const ok =
      x === null ||
      typeof x === 'boolean' ||
      (typeof x === 'number' && Number.isFinite(x)) ||
      (typeof x === 'string' && x.length <= maxMetadataStringLength);
    if (!ok) return NOT_SURE;
    boundBytes += 6 * k.length + 4 + (typeof x === 'string' ? 6 * x.length + 2 : 32);
    if (out) out[k] = x;
  }
  if (boundBytes > maxMetadataBytes && Buffer.byteLength(JSON.stringify(v)) > maxMetadataBytes) return NOT_SURE;
  return out ?? v;
}

const { serviceDurationMinutes, priority } = targetLimits;
const targetFields = new Map<string, (v: unknown, pass: Pass) => Checked<unknown>>([
  ['address', address],
  ['coordinates', coordinates],
  ['timeWindows', timeWindows],
  ['serviceDurationMinutes', (x) => (intIn(x, serviceDurationMinutes.min, serviceDurationMinutes.max) ? x : NOT_SURE)],
  ['priority', (x) => (intIn(x, priority.min, priority.max) ? x : NOT_SURE)],
  ['tags', tags],
  ['metadata', metadata],
]);

/**
 * targetItemSchema's output for a target it accepts, when this check is sure of it; else
 * undefined. A target with nothing to trim is its own output (the object given, not a copy).
 */
export function checkTarget(v: unknown): TargetFields | undefined {
  const first: Pass = { building: false, trimmed: false };
  const sure = check(v, first);
  if (sure === undefined || !first.trimmed) return sure as TargetFields | undefined;
  return check(v, { building: true, trimmed: true }) as TargetFields | undefined;
}

/** The target as accepted (itself, unless building), or undefined when not sure. */
function check(v: unknown, pass: Pass): Obj | undefined {
  if (!isObject(v)) return undefined;
  const out: Obj | null = pass.building ? {} : null;
  for (const k of Object.keys(v)) {
    const x = v[k];
    if (k === 'externalId' || k === 'name') {
      const t = text(x, k === 'name' ? targetLimits.name : targetLimits.externalId, pass);
      if (t === undefined) return undefined;
      if (out) out[k] = t;
      continue;
    }
    const field = targetFields.get(k);
    if (!field) return undefined;
    if (x === null) {
      if (out) out[k] = null;
      continue;
    }
    const checked = field(x, pass);
    if (checked === NOT_SURE) return undefined;
    if (out) out[k] = checked;
  }
  if (!('externalId' in v) || !('name' in v)) return undefined;
  if (v.address == null && v.coordinates == null) return undefined;
  return out ?? v;
}
