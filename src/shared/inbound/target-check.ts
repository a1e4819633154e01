// A hand-written check of one batch target with the verdict and output of targetItemSchema
// (target-schema.ts), for the gateway's hot path: zod per target was a quarter of the gateway's
// CPU on large batches. It only ever accepts: anything it is not sure of (an invalid target, an
// odd key) returns undefined and zod decides, and words the errors. zod stays the one source of
// the rules and of the OpenAPI document; test/unit/target-check.test.ts proves on generated valid
// and invalid targets that whatever this accepts, zod accepts with the same output.
import { instantInRange, maxMetadataBytes, maxMetadataKeys } from '../common-schemas.js';
import { timeWindowSchema } from '../common-schemas.js';
import { maxTags, maxTimeWindows, type TargetFields } from './target-schema.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** text(max): trimmed, 1 … max UTF-16 units after trimming; undefined when not. */
function text(v: unknown, max: number): string | undefined {
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t.length >= 1 && t.length <= max ? t : undefined;
}

const intIn = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;
const numberIn = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;

const NOT_SURE = Symbol('not sure');
type Checked<T> = T | typeof NOT_SURE;

/** A nullish field: absent stays absent, null stays null, a value must pass check. */
function nullish<T>(o: Obj, key: string, out: Obj, check: (v: unknown) => Checked<T>): boolean {
  if (!(key in o)) return true;
  const v = o[key];
  if (v === null) {
    out[key] = null;
    return true;
  }
  const checked = check(v);
  if (checked === NOT_SURE) return false;
  out[key] = checked;
  return true;
}

const addressKeys = new Set(['line1', 'line2', 'postalCode', 'city', 'region', 'countryCode']);

function address(v: unknown): Checked<Obj> {
  if (!isObject(v)) return NOT_SURE;
  for (const k of Object.keys(v)) if (!addressKeys.has(k)) return NOT_SURE;
  const out: Obj = {};
  const line1 = text(v.line1, 200);
  const city = text(v.city, 100);
  if (line1 === undefined || city === undefined) return NOT_SURE;
  if (typeof v.countryCode !== 'string' || !/^[A-Z]{2}$/.test(v.countryCode)) return NOT_SURE;
  out.line1 = line1;
  const texts: [string, number][] = [
    ['line2', 200],
    ['postalCode', 20],
  ];
  for (const [key, max] of texts) if (!nullish(v, key, out, (x) => text(x, max) ?? NOT_SURE)) return NOT_SURE;
  out.city = city;
  if (!nullish(v, 'region', out, (x) => text(x, 100) ?? NOT_SURE)) return NOT_SURE;
  out.countryCode = v.countryCode;
  return out;
}

function coordinates(v: unknown): Checked<Obj> {
  if (!isObject(v)) return NOT_SURE;
  const keys = Object.keys(v);
  if (keys.length !== 2 || !('latitude' in v) || !('longitude' in v)) return NOT_SURE;
  if (!numberIn(v.latitude, -90, 90) || !numberIn(v.longitude, -180, 180)) return NOT_SURE;
  return { latitude: v.latitude, longitude: v.longitude };
}

// The format zod itself checks instants against (z.iso.datetime({ offset: true })).
const instantPattern: RegExp = (() => {
  const pattern = (timeWindowSchema.shape.start as unknown as { _zod: { pattern?: unknown } })._zod.pattern;
  if (!(pattern instanceof RegExp))
    throw new Error('zod no longer exposes the instant pattern: update target-check.ts');
  return pattern;
})();

function timeWindows(v: unknown): Checked<Obj[]> {
  if (!Array.isArray(v) || v.length > maxTimeWindows) return NOT_SURE;
  const out: Obj[] = [];
  for (const w of v) {
    if (!isObject(w) || Object.keys(w).length !== 2) return NOT_SURE;
    const { start, end } = w;
    if (typeof start !== 'string' || typeof end !== 'string') return NOT_SURE;
    if (!instantPattern.test(start) || !instantPattern.test(end)) return NOT_SURE;
    if (!instantInRange(start) || !instantInRange(end) || !(Date.parse(end) > Date.parse(start))) return NOT_SURE;
    out.push({ start, end });
  }
  return out;
}

function tags(v: unknown): Checked<string[]> {
  if (!Array.isArray(v) || v.length > maxTags) return NOT_SURE;
  const out: string[] = [];
  for (const tag of v) {
    const t = text(tag, 50);
    if (t === undefined) return NOT_SURE;
    out.push(t);
  }
  return out;
}

function metadata(v: unknown): Checked<Obj> {
  if (!isObject(v)) return NOT_SURE;
  const keys = Object.keys(v);
  if (keys.length > maxMetadataKeys) return NOT_SURE;
  const out: Obj = {};
  for (const k of keys) {
    if (k.length < 1 || k.length > 100 || k === '__proto__') return NOT_SURE;
    const x = v[k];
    const ok =
      x === null ||
      typeof x === 'boolean' ||
      (typeof x === 'number' && Number.isFinite(x)) ||
      (typeof x === 'string' && x.length <= 1000);
    if (!ok) return NOT_SURE;
    out[k] = x;
  }
  if (Buffer.byteLength(JSON.stringify(out)) > maxMetadataBytes) return NOT_SURE;
  return out;
}

const targetKeys = new Set([
  'externalId',
  'name',
  'address',
  'coordinates',
  'timeWindows',
  'serviceDurationMinutes',
  'priority',
  'tags',
  'metadata',
]);

/** targetItemSchema's output for a target it accepts, when this check is sure of it; else undefined. */
export function checkTarget(v: unknown): TargetFields | undefined {
  if (!isObject(v)) return undefined;
  for (const k of Object.keys(v)) if (!targetKeys.has(k)) return undefined;
  const externalId = text(v.externalId, 100);
  const name = text(v.name, 200);
  if (externalId === undefined || name === undefined) return undefined;
  const out: Obj = { externalId, name };
  const sure =
    nullish(v, 'address', out, address) &&
    nullish(v, 'coordinates', out, coordinates) &&
    nullish(v, 'timeWindows', out, timeWindows) &&
    nullish(v, 'serviceDurationMinutes', out, (x) => (intIn(x, 0, 1440) ? x : NOT_SURE)) &&
    nullish(v, 'priority', out, (x) => (intIn(x, 1, 5) ? x : NOT_SURE)) &&
    nullish(v, 'tags', out, tags) &&
    nullish(v, 'metadata', out, metadata);
  if (!sure || (out.address == null && out.coordinates == null)) return undefined;
  return out as TargetFields;
}
