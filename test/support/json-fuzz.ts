// Building blocks of the schema-driven fuzz test (test/e2e/fuzz.test.ts): JSON values that can
// carry what plain objects cannot (raw number literals, duplicate or prototype-named keys, exact
// key order), example values generated from the served OpenAPI schemas, and the places in a value
// a mutation can hit.

/** A JSON text fragment inserted as it is (number literals such as -0 or 2^63, huge nestings). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** An object as an ordered list of entries: keys like __proto__, duplicate keys, any count. */
export class JsonPairs {
  constructor(readonly entries: readonly (readonly [string, FuzzJson])[]) {}
}

export type FuzzJson =
  null | boolean | number | string | RawJson | JsonPairs | readonly FuzzJson[] | { readonly [key: string]: FuzzJson };

/**
 * The JSON text of a value. Strings go through JSON.stringify, which writes a lone surrogate as
 * its escape (`"\ud800"`) and NUL as `"\u0000"`: the text stays well-formed UTF-8.
 */
export function toJsonText(value: FuzzJson): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof JsonPairs) {
    return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  }
  if (Array.isArray(value)) return `[${value.map((v: FuzzJson) => toJsonText(v)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return toJsonText(new JsonPairs(Object.entries(value)));
  }
  return JSON.stringify(value);
}

export type JsonPath = readonly (string | number)[];

/** The entries of an object node (plain or JsonPairs), else undefined. */
export function entriesOf(node: FuzzJson | undefined): (readonly [string, FuzzJson])[] | undefined {
  if (node instanceof JsonPairs) return [...node.entries];
  if (node === null || node === undefined || typeof node !== 'object' || Array.isArray(node)) return undefined;
  if (node instanceof RawJson) return undefined;
  return Object.entries(node as Record<string, FuzzJson>);
}

export function getAt(root: FuzzJson, path: JsonPath): FuzzJson | undefined {
  let node: FuzzJson | undefined = root;
  for (const seg of path) {
    if (typeof seg === 'number') node = Array.isArray(node) ? (node as FuzzJson[])[seg] : undefined;
    else node = entriesOf(node)?.find(([k]) => k === seg)?.[1];
    if (node === undefined) return undefined;
  }
  return node;
}

/**
 * A copy of root with the value at path replaced (undefined: the key removed); a missing last key
 * is appended. Objects become JsonPairs on the way, so any key name is an ordinary entry.
 */
export function setAt(root: FuzzJson, path: JsonPath, value: FuzzJson | undefined): FuzzJson {
  if (path.length === 0) {
    if (value === undefined) throw new Error('cannot remove the root');
    return value;
  }
  const [seg, ...rest] = path;
  if (typeof seg === 'number') {
    const items = [...(root as FuzzJson[])];
    const child = rest.length ? setAt(items[seg]!, rest, value) : value;
    if (child === undefined) items.splice(seg, 1);
    else items[seg] = child;
    return items;
  }
  const entries = entriesOf(root);
  if (!entries) throw new Error(`no object at ${String(seg)}`);
  const at = entries.findIndex(([k]) => k === seg);
  const child = rest.length ? setAt(entries[at]![1], rest, value) : value;
  if (child === undefined) {
    if (at >= 0) entries.splice(at, 1);
  } else if (at >= 0) entries[at] = [seg!, child];
  else entries.push([seg!, child]);
  return new JsonPairs(entries);
}

/** Adds entries to the object at path (kept after its own, duplicates included). */
export function addEntries(root: FuzzJson, path: JsonPath, extra: readonly (readonly [string, FuzzJson])[]): FuzzJson {
  const node = path.length ? getAt(root, path) : root;
  const entries = entriesOf(node);
  if (!entries) throw new Error(`no object at ${path.join('.')}`);
  const replaced = new JsonPairs([...entries, ...extra]);
  return path.length ? setAt(root, path, replaced) : replaced;
}

// --- Schemas --------------------------------------------------------------------------------

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  example?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
};

export type SchemaDoc = { components?: { schemas?: Record<string, JsonSchema> } };

/** The schema a $ref names (local references into the document), followed until none is left. */
export function resolveSchema(doc: SchemaDoc, schema: JsonSchema): JsonSchema {
  let s = schema;
  for (let i = 0; s.$ref && i < 20; i++) {
    const name = s.$ref.replace('#/components/schemas/', '');
    const target = doc.components?.schemas?.[name];
    if (!target) throw new Error(`unresolved ${s.$ref}`);
    s = { ...target, ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref')) };
  }
  return s;
}

/** The non-null branch of an `anyOf [X, null]` (the first one otherwise), resolved. */
export function mainBranch(doc: SchemaDoc, schema: JsonSchema): JsonSchema {
  const s = resolveSchema(doc, schema);
  const branches = s.anyOf ?? s.oneOf;
  if (!branches) return s;
  const chosen = branches.find((b) => resolveSchema(doc, b).type !== 'null') ?? branches[0]!;
  return mainBranch(doc, chosen);
}

export type ExampleHints = {
  /** A value for a property of this name (given its resolved schema), instead of a generated one. */
  byName: Record<string, (schema: JsonSchema) => FuzzJson | undefined>;
  /** Optional properties that are filled anyway (e.g. a target's coordinates); 'all': every one. */
  include: ReadonlySet<string> | 'all';
  /** With include 'all': optional properties left out all the same (e.g. mutually exclusive ones). */
  exclude?: ReadonlySet<string>;
  /** Items of an array at least (default: its minItems). */
  minItems?: number;
};

const wanted = (hints: ExampleHints, key: string) =>
  hints.include === 'all' ? !hints.exclude?.has(key) : hints.include.has(key);

const patternCandidates = [
  'DE',
  'REPAIR',
  '07:00',
  '+4930123456',
  '1',
  'fuzz',
  'fuzz-1',
  '2026-11-23',
  '2030-06-03T08:00:00+02:00',
  '00000000-0000-4000-8000-000000000000',
];

/** A valid example of a schema: required properties (and hinted ones), smallest legal counts. */
export function exampleOf(doc: SchemaDoc, schema: JsonSchema, hints: ExampleHints, name = ''): FuzzJson {
  const s = mainBranch(doc, schema);
  if (s.const !== undefined) return s.const as FuzzJson;
  if (s.enum) return s.enum[0] as FuzzJson;
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const out: [string, FuzzJson][] = [];
      for (const [key, prop] of Object.entries(s.properties ?? {})) {
        if (!s.required?.includes(key) && !wanted(hints, key)) continue;
        const hinted = hints.byName[key]?.(mainBranch(doc, prop));
        out.push([key, hinted !== undefined ? hinted : exampleOf(doc, prop, hints, key)]);
      }
      return new JsonPairs(out);
    }
    case 'array': {
      const count = Math.min(Math.max(s.minItems ?? 0, hints.minItems ?? 0), s.maxItems ?? Infinity);
      return Array.from({ length: count }, () => exampleOf(doc, s.items ?? {}, hints, name));
    }
    case 'integer':
    case 'number': {
      const low = s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : (s.minimum ?? 1);
      const value = Math.max(low, 1);
      return s.maximum !== undefined ? Math.min(value, s.maximum) : value;
    }
    case 'boolean':
      return true;
    case 'string': {
      if (s.format === 'date-time') return '2099-06-03T08:00:00+02:00';
      if (s.format === 'date') return '2026-11-23';
      if (s.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
      if (s.format === 'email') return 'fuzz@example.com';
      if (s.pattern) {
        const re = new RegExp(s.pattern);
        const found = patternCandidates.find((c) => re.test(c));
        if (found) return found;
      }
      const base = typeof s.example === 'string' ? s.example : `fuzz-${name || 'text'}`;
      return base.padEnd(s.minLength ?? 0, 'x').slice(0, s.maxLength ?? base.length + (s.minLength ?? 0));
    }
    case 'null':
      return null;
    default:
      return 'fuzz';
  }
}

/** A place in a value a mutation can hit, with its schema where the document describes it. */
export type FuzzLocation = {
  path: JsonPath;
  /** Resolved main branch of the schema at this place, when known. */
  schema?: JsonSchema;
  /** What is there: an object, an array, a scalar, or nothing yet (an optional property). */
  node: 'object' | 'array' | 'scalar' | 'absent';
  /** Containers around this place (the root object is level 1 for its properties). */
  depth: number;
};

/** Every place in value (walked along its schema), absent optional properties included. */
export function locationsOf(doc: SchemaDoc, value: FuzzJson, schema: JsonSchema | undefined): FuzzLocation[] {
  const out: FuzzLocation[] = [];
  const walk = (node: FuzzJson | undefined, s: JsonSchema | undefined, path: JsonPath, depth: number) => {
    const resolved = s ? mainBranch(doc, s) : undefined;
    if (node === undefined) {
      out.push({ path, schema: resolved, node: 'absent', depth });
      return;
    }
    const entries = entriesOf(node);
    if (entries) {
      out.push({ path, schema: resolved, node: 'object', depth });
      for (const [k, v] of entries) walk(v, resolved?.properties?.[k], [...path, k], depth + 1);
      for (const [k, prop] of Object.entries(resolved?.properties ?? {})) {
        if (!entries.some(([e]) => e === k)) walk(undefined, prop, [...path, k], depth + 1);
      }
    } else if (Array.isArray(node)) {
      out.push({ path, schema: resolved, node: 'array', depth });
      (node as FuzzJson[]).forEach((v, i) => walk(v, resolved?.items, [...path, i], depth + 1));
    } else {
      out.push({ path, schema: resolved, node: 'scalar', depth });
    }
  };
  walk(value, schema, [], 0);
  return out;
}

/** `body.customer.name`, `body.targets[0].name` */
export function describePath(root: string, path: JsonPath): string {
  return path.reduce<string>((acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : `${acc}.${seg}`), root);
}

// --- Edge values: valid by the schema, at its bounds or odd in meaning ----------------------------

const dateTimeEdges = [
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00+23:59',
  '9999-12-31T23:59:59-23:59',
  '1970-01-01T00:00:00Z',
  '2024-02-29T12:00:00Z',
  '2030-06-03T08:00:00.123456789012345678901234567890+02:00',
  '2030-06-03T08:00:00.0000000000000Z',
  '2030-06-03T23:59:59.999999999-00:00',
  '2025-06-01T09:30:00+23:59', // offsets past PostgreSQL's ±15:59
  '2098-06-03T08:00:00-16:00',
];
const dateEdges = ['0000-01-01', '0001-01-01', '9999-12-31', '2024-02-29', '1900-02-28', '1970-01-01'];
const uuidEdges = [
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  'AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA',
  '00000000-0000-8000-b000-000000000000',
];
const emailEdges = [
  `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.de`,
  "o'hara+tag@example.com",
  'a@b.co',
  'x@xn--bcher-kva.example',
];
const patternEdges = [
  '00:00',
  '23:59',
  '24:00',
  '+1234567',
  '+999999999999999',
  '+0 ()/-',
  'ZZ',
  'AA',
  '_',
  '-',
  '.',
  '0',
  'a'.repeat(50),
  '9'.repeat(19),
];

/**
 * Values the schema accepts (or just misses) that are extreme or odd in meaning: bounds of numbers
 * and lengths, the most items, multi-byte text at the length limit, dates at the ends of the
 * calendar, the nil and max UUIDs, every enum value.
 */
export function edgeValuesOf(doc: SchemaDoc, schema: JsonSchema, hints: ExampleHints, name = ''): FuzzJson[] {
  const s = mainBranch(doc, schema);
  if (s.enum) return s.enum as FuzzJson[];
  if (s.const !== undefined) return [s.const as FuzzJson];
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string': {
      if (s.format === 'date-time') return dateTimeEdges;
      if (s.format === 'date') return dateEdges;
      if (s.format === 'uuid') return uuidEdges;
      if (s.format === 'email') return emailEdges;
      if (s.pattern) {
        const re = new RegExp(s.pattern);
        const found = patternEdges.filter((c) => re.test(c));
        if (found.length) return found;
      }
      const max = s.maxLength ?? 1000;
      return [
        'x'.repeat(max),
        '€'.repeat(max), // 3 bytes each
        '😀'.repeat(Math.floor(max / 2)), // two UTF-16 units each: the limit in JavaScript's count
        `${'e\u0301'.repeat(Math.floor(max / 2))}`, // combining marks
        ' '.repeat(Math.max(1, s.minLength ?? 1)),
        '\u200b',
      ];
    }
    case 'integer':
    case 'number': {
      const out: FuzzJson[] = [];
      if (s.minimum !== undefined) out.push(s.minimum);
      if (s.maximum !== undefined) out.push(s.maximum);
      if (s.exclusiveMinimum !== undefined)
        out.push(new RawJson(`${s.exclusiveMinimum}.0001`), s.exclusiveMinimum + 1e-9);
      if (type === 'number') out.push(new RawJson('52.123456789012345678901234567890'), new RawJson('1E1'));
      out.push(new RawJson('-0'), new RawJson('0.0'));
      return out;
    }
    case 'array': {
      const item = s.items ?? {};
      const count = s.maxItems ?? 500;
      return [Array.from({ length: count }, () => exampleOf(doc, item, hints, name))];
    }
    case 'object': {
      if (!s.properties && s.additionalProperties && typeof s.additionalProperties === 'object') {
        // A free map (metadata): 50 keys, 51 keys, one long value, long keys.
        return [
          new JsonPairs(Array.from({ length: 50 }, (_, i) => [`key${i}`, i])),
          new JsonPairs(Array.from({ length: 51 }, (_, i) => [`key${i}`, i])),
          new JsonPairs([['long', 'v'.repeat(4000)]]),
          new JsonPairs(Array.from({ length: 30 }, (_, i) => [`${i}`.padEnd(100, 'k'), 'x'.repeat(100)])),
          new JsonPairs([['nested', new JsonPairs([['a', 1]])]]),
        ];
      }
      // Every optional property filled, not only the required ones.
      return [exampleOf(doc, s, { ...hints, include: 'all' }, name)];
    }
    default:
      return [null];
  }
}

// --- Odd key names -------------------------------------------------------------------------------

/** Pieces a key is made of: lone surrogates, NUL, a surrogate pair, JSON and path syntax, plain text. */
const keyPieces = [
  '\ud800',
  '\udfff',
  '\udbff',
  '\u0000',
  '\ud83d\ude00',
  '"',
  '\\',
  '.',
  '[0]',
  'ü',
  ' ',
  'k',
  '__proto__',
];

/**
 * A random key name of 1-6 pieces (rnd: a seeded PRNG, test/support/prng.ts) that holds at least
 * one lone surrogate or NUL, i.e. a name PostgreSQL could not store as it is.
 */
export function unstorableKeyName(rnd: () => number): string {
  const pieces = Array.from(
    { length: 1 + Math.floor(rnd() * 6) },
    () => keyPieces[Math.floor(rnd() * keyPieces.length)]!,
  );
  // One that stays unstorable whatever surrounds it (a high surrogate then a low one is a pair).
  const unpairable = ['\u0000', 'k\udfff', '\ud800k'][Math.floor(rnd() * 3)]!;
  pieces.splice(Math.floor(rnd() * (pieces.length + 1)), 0, unpairable);
  return pieces.join('');
}
