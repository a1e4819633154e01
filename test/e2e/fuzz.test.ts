import { sendTestEvent } from '../../src/shared/webhooks/endpoint-deliveries.js';
import { createEndpoint, findEndpoint } from '../../src/shared/webhooks/endpoints.js';
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, insertFinishedImportJob, insertImportJob, insertRouteSuggestion } from '../support/fixtures.js';
import {
  addEntries,
  describePath,
  edgeValuesOf,
  entriesOf,
  exampleOf,
  getAt,
  JsonPairs,
  locationsOf,
  mainBranch,
  RawJson,
  setAt,
  toJsonText,
  type ExampleHints,
  type FuzzJson,
  type FuzzLocation,
  type JsonSchema,
  type SchemaDoc,
} from '../support/json-fuzz.js';
import { untilNotRefused } from '../support/api-client.js';
import { mulberry32 } from '../support/prng.js';
import { useGatewaySuite } from '../support/suite.js';
import { scaled } from '../support/time-scale.js';
import { accessToken, bearerToken } from './oauth-helpers.js';

// Every operation of the served OpenAPI document, driven with valid credentials and request
// values generated from its own schemas, then mutated with hostile values: lone surrogates, NUL,
// prototype-like and odd key names, wrong types, huge numbers, long strings, nesting and key counts
// around the documented limits and far beyond, arrays for objects, empty bodies, invalid UTF-8,
// wrong content types, hostile path segments, duplicated and odd query parameters, odd headers;
// also edge values the schema accepts (every field of a full body: dates at the ends of the
// calendar, extreme offsets, bounds, multi-byte text at the length limit) and generated
// combinations of several mutations. Every answer must be below 500 and in the documented shape (the API client checks status, media
// type and body against the document); afterwards the service must still answer, a valid request
// of every operation included. Deterministic: one seeded PRNG builds every request before the
// first is sent (FUZZ_SEED picks another sequence, FUZZ_LOG=<file> writes every request down).
const seed = Number(process.env.FUZZ_SEED) || 0x5eed12;
/** FUZZ_LOG=<file>: every hostile request and its status, one after another (for reading a run). */
const logFile = process.env.FUZZ_LOG;

const suite = useGatewaySuite({
  env: () => ({
    // Hundreds of requests from one client and one address: no limit may cut the run short.
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_MINUTE: '1000000',
    OAUTH_TOKEN_CLIENT_LIMIT_PER_MINUTE: '1000000',
    OAUTH_TOKEN_ADDRESS_LIMIT_PER_MINUTE: '1000000',
    WEBHOOK_ENDPOINTS_PER_CLIENT: '1000',
  }),
});

// --- The document's operations ----------------------------------------------------------------

type DocParameter = { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: JsonSchema };
type DocOperation = {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: DocParameter[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
};
type FullDoc = SchemaDoc & { paths: Record<string, Record<string, DocOperation>> };

type Operation = {
  id: string;
  method: string;
  template: string;
  auth: 'apiKey' | 'accessToken' | 'none';
  pathParams: DocParameter[];
  queryParams: DocParameter[];
  headerParams: DocParameter[];
  body?: { media: 'json' | 'form'; schema: JsonSchema };
};

const doc = () => suite.api.doc as unknown as FullDoc;

function operations(): Operation[] {
  return Object.entries(doc().paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, op]): Operation => {
      const params = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      const form = content['application/x-www-form-urlencoded'];
      const json = content['application/json'];
      return {
        id: op.operationId,
        method,
        template,
        auth: op.security?.some((s) => s.apiKey)
          ? 'apiKey'
          : op.security?.some((s) => s.oauth2)
            ? 'accessToken'
            : 'none',
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        headerParams: params.filter((p) => p.in === 'header'),
        body: form ? { media: 'form', schema: form.schema } : json ? { media: 'json', schema: json.schema } : undefined,
      };
    }),
  );
}

// --- Valid requests ---------------------------------------------------------------------------

/** What valid requests need beyond the schemas: existing objects of the demo client. */
type Fixtures = {
  token: string;
  /** An event of the demo client (webhook replays). */
  eventId: string;
  /** `<template> <param>` → a path value that reaches the handler with a 2xx. */
  pathValues: Record<string, string>;
};

let fixtures: Fixtures;
let sequence = 0;
const unique = () => `fuzz-${++sequence}`;

/** Values the schemas cannot tell: the tenant's job type and items, sane times and places. */
function exampleHints(): ExampleHints {
  const all = suite.demo.clients.all!;
  return {
    byName: {
      externalId: unique,
      externalReference: unique,
      externalEventId: unique,
      externalBatchId: unique,
      sourceSystem: () => 'fuzz',
      jobType: () => 'REPAIR',
      sku: () => 'CU-PIPE-15',
      unitOfMeasure: () => 'm',
      quantity: () => 1,
      usedAt: () => '2025-06-01T09:30:00+02:00',
      start: (s) => (s.format === 'date-time' ? '2099-06-03T08:00:00+02:00' : '07:00'),
      end: (s) => (s.format === 'date-time' ? '2099-06-03T12:00:00+02:00' : '19:00'),
      date: () => '2026-11-23',
      latitude: () => 52.5,
      longitude: () => 13.4,
      contact: () => ({ name: 'Fuzz Contact', email: 'fuzz@example.com' }),
      timeZone: () => 'Europe/Berlin',
      scope: () => 'appointments.read appointments.write',
      client_id: () => all.clientId,
      client_secret: () => all.apiKey,
      url: () => 'https://93.184.215.14/hooks', // a public address literal: passes the SSRF policy without DNS
      eventId: () => fixtures.eventId,
      since: () => '2026-01-01T00:00:00Z',
    },
    include: new Set(['coordinates', 'sku', 'client_id', 'client_secret', 'events']),
  };
}

/**
 * Every optional property filled (arrays with one item at least), except those that name objects
 * the tenant does not have or exclude each other: the body still succeeds and its every field is a
 * place a mutation can hit.
 */
function fullHints(): ExampleHints {
  return {
    ...exampleHints(),
    include: 'all',
    exclude: new Set(['inventoryItemId', 'inventoryLocationId', 'externalLocationCode', 'importTargetRef']),
    minItems: 1,
  };
}

function credentials(op: Operation): Record<string, string> {
  if (op.auth === 'apiKey') return bearer(suite.demo.clients.all!.apiKey);
  if (op.auth === 'accessToken') return bearerToken(fixtures.token);
  return {};
}

type Rnd = () => number;
const pick = <T>(rnd: Rnd, items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
const hex = (rnd: Rnd, n: number) => Array.from({ length: n }, () => Math.floor(rnd() * 16).toString(16)).join('');
const uuid = (rnd: Rnd) =>
  `${hex(rnd, 8)}-${hex(rnd, 4)}-4${hex(rnd, 3)}-${pick(rnd, ['8', '9', 'a', 'b'])}${hex(rnd, 3)}-${hex(rnd, 12)}`;

/** A value as it goes into a path, query or header: strings as they are, the rest as JSON. */
const plain = (v: FuzzJson) => (typeof v === 'string' ? v : toJsonText(v));

/**
 * The parts of one valid request of op; a fresh body (new external ids) on every call, with the
 * required fields only or (full) every field.
 */
function validParts(op: Operation, rnd: Rnd, full = false) {
  const pathValues = Object.fromEntries(
    op.pathParams.map((p) => [
      p.name,
      fixtures.pathValues[`${op.template} ${p.name}`] ??
        encodeURIComponent(plain(exampleOf(doc(), p.schema, exampleHints(), p.name))),
    ]),
  );
  const headers: Record<string, string> = { ...credentials(op) };
  for (const h of op.headerParams) {
    const s = mainBranch(doc(), h.schema);
    headers[h.name.toLowerCase()] = s.format === 'uuid' ? uuid(rnd) : plain(exampleOf(doc(), h.schema, exampleHints()));
  }
  const body = op.body ? exampleOf(doc(), op.body.schema, full ? fullHints() : exampleHints()) : undefined;
  return { pathValues, headers, body };
}

const fillPath = (template: string, values: Record<string, string>) =>
  template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name]!);

/** name=value pairs with the values already encoded (so a test can send any bytes' escape). */
type FormPairs = [name: string, encodedValue: string][];
const formPairsOf = (value: FuzzJson): FormPairs =>
  (entriesOf(value) ?? []).map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(String(v))]);
const formText = (pairs: FormPairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&');

// --- Requests and what came back --------------------------------------------------------------

type FuzzRequest = {
  op: Operation;
  kind: string;
  /** What was mutated, e.g. `body.customer.name = "\ud800"`. */
  note: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
};

type Outcome = {
  status?: number;
  text?: string;
  requestId?: string | null;
  /** The API client's complaint: an undocumented status, media type or body. */
  shapeError?: string;
  /** No answer at all (connection closed, reset). */
  transportError?: string;
};

function jsonRequest(
  op: Operation,
  kind: string,
  note: string,
  parts: ReturnType<typeof validParts>,
  body: FuzzJson | Buffer | undefined,
  options: { contentType?: string | null; query?: string; headers?: Record<string, string> } = {},
): FuzzRequest {
  const headers = { ...parts.headers, ...options.headers };
  const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(toJsonText(body), 'utf8');
  if (bytes !== undefined && options.contentType !== null) {
    headers['content-type'] = options.contentType ?? (op.body?.media === 'form' ? formMedia : 'application/json');
  }
  const path = fillPath(op.template, parts.pathValues) + (options.query ? `?${options.query}` : '');
  return { op, kind, note, method: op.method, path, headers, body: bytes };
}
const formMedia = 'application/x-www-form-urlencoded';

const short = (text: string, max = 160) => {
  const shown = JSON.stringify(text);
  return shown.length > max ? `${shown.slice(0, max)}… (${text.length} chars)` : shown;
};

// --- Hostile values ---------------------------------------------------------------------------

const loneSurrogates = ['\ud800', 'a\udfffb', '\udc00\ud800', 'x\ud83d', '\udbff'];
const nulStrings = ['\u0000', 'a\u0000b', '\u0000'.repeat(100), 'x\u0000\ud800'];
const oddKeys = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '',
  'prototype',
  'valueOf',
  '__defineGetter__',
  'then',
  'length',
  '$ref',
  'a.b',
  '[0]',
  'k'.repeat(10_000),
];
const oddKeyValues: FuzzJson[] = [
  1,
  null,
  'x',
  {},
  [],
  new JsonPairs([['polluted', true]]),
  new JsonPairs([['__proto__', new JsonPairs([['isAdmin', true]])]]),
];
const wrongTypes: FuzzJson[] = [
  true,
  false,
  null,
  0,
  -1,
  1.5,
  '',
  'x',
  '1',
  [],
  [1, 2],
  {},
  new JsonPairs([['a', 1]]),
  [[[]]],
];
const hugeNumbers = [
  '1e308',
  '-1e308',
  '-0',
  '-0.0',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '1e309',
  '-1e309',
  '1E400',
  '123456789012345678901234567890',
  '1e-400',
  '5e-324',
  '2147483648',
  '-2147483649',
  '4294967296',
  '9007199254740993',
  '1.00000000000000011',
  '1000000.00001',
  '0.00001',
];
const longStrings = [
  'x'.repeat(100_000),
  '€'.repeat(30_000),
  '😀'.repeat(20_000),
  'x'.repeat(4001),
  '\\'.repeat(10_000),
  '\n'.repeat(5000),
];
const oddStrings = [
  ' ',
  '\t',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '${jndi:ldap://x}',
  '%00',
  '\u202e',
  '\ufeff',
  '\uffff',
  'null',
  '-0',
  'NaN',
  '2030-02-30T25:61:61+99:99',
  '0000-00-00',
  '99999-12-31T00:00:00Z',
];
/** Edge values by field name, beyond what the schema tells (edgeValuesOf). */
const edgesByName: Record<string, FuzzJson[]> = {
  timeZone: [
    'Etc/GMT+14',
    'Etc/GMT-14',
    'Pacific/Kiritimati',
    'Antarctica/Troll',
    'America/Argentina/ComodRivadavia',
    'EST5EDT',
    '+14:00',
    '-23:59',
    'GMT-0',
    'europe/berlin',
    'Europe/Berlin ',
    'Mars/Olympus',
    'Z',
    'x'.repeat(64),
  ],
};
const emptyBodies = ['', ' ', '\n', 'null', '{}', '[]', '""', '0', 'true'];
const malformedJson = [
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{"a":NaN}',
  '{"a":1}/*c*/',
  '{"a":1}{"b":2}',
  '{"a":"\u0000"}',
  '{"a":"\\x00"}',
  '{"a":"\\ud800',
  '\u0000',
];
/** Byte sequences that are not UTF-8: 0xFF, overlong NUL, CESU surrogate, beyond U+10FFFF, … */
const invalidUtf8: number[][] = [
  [0xff],
  [0xc3, 0x28],
  [0xc0, 0x80],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80],
  [0xe2, 0x82],
];
const contentTypes: (string | null)[] = [
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fuzz',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json; charset=',
  'application/json;;;charset=utf-8',
  'application/vnd.fuzz+json',
  'APPLICATION/JSON',
  'application/json; charset="UTF-8"',
  'text/json',
  '*/*',
  'application/*',
  'json',
  null,
];
/** Path segments as sent (already percent-encoded where they need to be). */
const pathSegments = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%ED%B0%80x',
  '%FF',
  '%C0%80',
  '%',
  '%zz',
  '%E2%82',
  'x'.repeat(3000),
  '0',
  '-1',
  '-0',
  '1e308',
  '9223372036854775807',
  '9223372036854775808',
  '9999999999999999999',
  '99999999999999999999',
  '2147483648',
  '4294967296',
  '1.5',
  '%201',
  '0x10',
  '__proto__',
  'constructor',
  'toString',
  '%2F',
  'null',
  'NaN',
  'Infinity',
  '%EF%BC%91',
  '%D9%A3',
  `apr_${'Z'.repeat(26)}`,
  'apr_%00',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '00000000-0000-4000-8000-00000000000G',
];
/** The ones every path parameter gets; the rest are drawn. */
const pathSegmentsAlways = ['%00', '%ED%A0%80', '%FF', '9999999999999999999'];
/** Query values as sent (percent-encoded). */
const queryValues = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%FF',
  '%',
  '',
  '1e308',
  '-0',
  '9223372036854775808',
  '2147483648',
  '-1',
  '0x10',
  '%2B5',
  '%205',
  '1.5',
  'x'.repeat(3000),
  'Queued%00',
  'queued',
  '__proto__',
  '%5B%5D',
  'true',
];
const queryNames = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '',
  'x'.repeat(1000),
  '%00',
  '%ED%A0%80',
  'a[b]',
  'take[]',
  'status[0]',
];
const headerValues = [
  '',
  'x'.repeat(4000),
  'ÿÿ',
  '%00',
  'null',
  '00000000-0000-0000-0000-00000000000g',
  '__proto__',
  'a,b',
];
const acceptValues = ['application/xml', 'text/plain', 'text/json;q=0.1, application/json;q=0', '*/*;q=0', 'x/y;q=abc'];

// --- Mutations of a JSON value ----------------------------------------------------------------

const literal = (v: FuzzJson) => {
  const text = toJsonText(v);
  return text.length > 80 ? `${text.slice(0, 80)}… (${text.length} chars)` : text;
};

/** Places of a kind: values whose schema says string/number, objects (present or to create), any. */
function placesFor(locs: FuzzLocation[], want: 'string' | 'number' | 'object' | 'any' | 'array'): FuzzLocation[] {
  const inner = locs.filter((l) => l.path.length > 0);
  const typeOf = (l: FuzzLocation) => (Array.isArray(l.schema?.type) ? l.schema?.type[0] : l.schema?.type);
  const found =
    want === 'string'
      ? inner.filter((l) => typeOf(l) === 'string')
      : want === 'number'
        ? inner.filter((l) => typeOf(l) === 'number' || typeOf(l) === 'integer')
        : want === 'object'
          ? locs.filter((l) => l.node === 'object' || (l.node === 'absent' && typeOf(l) === 'object'))
          : want === 'array'
            ? locs.filter((l) => l.node === 'array' || (l.node === 'absent' && typeOf(l) === 'array'))
            : inner;
  return found.length ? found : inner.length ? inner : locs;
}

type Mutation = { value: FuzzJson; note: string };

function withEntries(value: FuzzJson, loc: FuzzLocation, extra: (readonly [string, FuzzJson])[]): FuzzJson {
  if (loc.node === 'absent') return setAt(value, loc.path, new JsonPairs(extra));
  return addEntries(value, loc.path, extra);
}

const mutations = {
  surrogate(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[], asKey = rnd() < 0.3): Mutation {
    const bad = pick(rnd, loneSurrogates);
    if (asKey) {
      const loc = pick(rnd, placesFor(locs, 'object'));
      return {
        value: withEntries(value, loc, [[bad, 'x']]),
        note: `key ${short(bad)} in ${describePath('body', loc.path)}`,
      };
    }
    const loc = pick(rnd, placesFor(locs, 'string'));
    return { value: setAt(value, loc.path, bad), note: `${describePath('body', loc.path)} = ${short(bad)}` };
  },
  nul(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[], asKey = rnd() < 0.3): Mutation {
    const bad = pick(rnd, nulStrings);
    if (asKey) {
      const loc = pick(rnd, placesFor(locs, 'object'));
      return {
        value: withEntries(value, loc, [[bad, 'x']]),
        note: `key ${short(bad)} in ${describePath('body', loc.path)}`,
      };
    }
    const loc = pick(rnd, placesFor(locs, 'string'));
    return { value: setAt(value, loc.path, bad), note: `${describePath('body', loc.path)} = ${short(bad)}` };
  },
  oddKey(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[], duplicate = rnd() < 0.25): Mutation {
    const loc = pick(rnd, placesFor(locs, 'object'));
    const existing = entriesOf(getAt(value, loc.path)) ?? [];
    if (duplicate && existing.length) {
      const [key] = pick(rnd, existing);
      const other = pick(rnd, wrongTypes);
      return {
        value: withEntries(value, loc, [[key, other]]),
        note: `duplicate key ${short(key)} = ${literal(other)} in ${describePath('body', loc.path)}`,
      };
    }
    const key = pick(rnd, oddKeys);
    const v = pick(rnd, oddKeyValues);
    return {
      value: withEntries(value, loc, [[key, v]]),
      note: `key ${short(key, 40)} = ${literal(v)} in ${describePath('body', loc.path)}`,
    };
  },
  wrongType(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[]): Mutation {
    const loc = pick(rnd, placesFor(locs, 'any'));
    const v = pick(rnd, wrongTypes);
    return { value: setAt(value, loc.path, v), note: `${describePath('body', loc.path)} = ${literal(v)}` };
  },
  hugeNumber(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[]): Mutation {
    const loc = pick(rnd, placesFor(locs, rnd() < 0.8 ? 'number' : 'any'));
    const v = pick(rnd, hugeNumbers);
    return { value: setAt(value, loc.path, new RawJson(v)), note: `${describePath('body', loc.path)} = ${v}` };
  },
  longString(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[], pool = longStrings): Mutation {
    const loc = pick(rnd, placesFor(locs, 'string'));
    const v = pick(rnd, pool);
    return { value: setAt(value, loc.path, v), note: `${describePath('body', loc.path)} = ${short(v, 30)}` };
  },
  oddString(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[]): Mutation {
    const loc = pick(rnd, placesFor(locs, 'string'));
    const v = pick(rnd, oddStrings);
    return { value: setAt(value, loc.path, v), note: `${describePath('body', loc.path)} = ${short(v)}` };
  },
  addOptional(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[]): Mutation {
    const absent = locs.filter((l) => l.node === 'absent' && l.schema);
    if (!absent.length) return mutations.wrongType(rnd, value, locs);
    const loc = pick(rnd, absent);
    const v = exampleOf(doc(), loc.schema!, exampleHints(), String(loc.path.at(-1)));
    return { value: setAt(value, loc.path, v), note: `${describePath('body', loc.path)} = ${literal(v)} (optional)` };
  },
  edge(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[]): Mutation {
    const described = locs.filter((l) => l.path.length > 0 && l.schema);
    if (!described.length) return mutations.wrongType(rnd, value, locs);
    const loc = pick(rnd, described);
    const name = String(loc.path.at(-1));
    const v = pick(rnd, [...edgeValuesOf(doc(), loc.schema!, exampleHints(), name), ...(edgesByName[name] ?? [])]);
    return { value: setAt(value, loc.path, v), note: `${describePath('body', loc.path)} = ${literal(v)} (edge)` };
  },
  removeRequired(rnd: Rnd, value: FuzzJson, locs: FuzzLocation[]): Mutation {
    const present = locs.filter((l) => l.path.length > 0 && l.node !== 'absent');
    if (!present.length) return mutations.wrongType(rnd, value, locs);
    const loc = pick(rnd, present);
    return { value: setAt(value, loc.path, undefined), note: `${describePath('body', loc.path)} removed` };
  },
};

const nestedArrays = (n: number) => new RawJson(`${'['.repeat(n)}${']'.repeat(n)}`);
const nestedObjects = (n: number) => new RawJson(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`);
const fillerEntries = (n: number) =>
  Array.from({ length: n }, (_, i) => [`k${i}`, i] as const satisfies readonly [string, FuzzJson]);

/** Marks a place in a body whose bytes are replaced after serialisation (invalid UTF-8). */
const byteMarker = 'FUZZBYTES';
function withBytes(value: FuzzJson, bytes: number[]): Buffer {
  const text = toJsonText(value);
  const at = text.indexOf(byteMarker);
  return Buffer.concat([
    Buffer.from(text.slice(0, at), 'utf8'),
    Buffer.from(bytes),
    Buffer.from(text.slice(at + byteMarker.length), 'utf8'),
  ]);
}
const hexBytes = (bytes: number[]) => bytes.map((b) => b.toString(16).padStart(2, '0')).join(' ');

// --- Requests per operation -------------------------------------------------------------------

/** Hostile path segments, query strings and headers: every operation gets these. */
function addressCases(op: Operation, rnd: Rnd): FuzzRequest[] {
  const out: FuzzRequest[] = [];
  const validBody = (parts: ReturnType<typeof validParts>) =>
    op.body?.media === 'form' ? Buffer.from(formText(formPairsOf(parts.body!))) : parts.body;
  for (const p of op.pathParams) {
    const drawn = Array.from({ length: 4 }, () => pick(rnd, pathSegments));
    for (const segment of [...pathSegmentsAlways, ...drawn]) {
      const parts = validParts(op, rnd);
      parts.pathValues[p.name] = segment;
      out.push(jsonRequest(op, 'path', `{${p.name}} = ${short(segment, 40)}`, parts, validBody(parts)));
    }
  }
  // Documented query parameters with hostile values, duplicated; odd names everywhere.
  for (const q of op.queryParams) {
    for (const v of [pick(rnd, queryValues), pick(rnd, queryValues)]) {
      const parts = validParts(op, rnd);
      out.push(
        jsonRequest(op, 'query', `?${q.name}=${short(v, 40)}`, parts, validBody(parts), { query: `${q.name}=${v}` }),
      );
    }
    for (const edge of edgeValuesOf(doc(), q.schema, exampleHints(), q.name)) {
      const parts = validParts(op, rnd);
      const v = encodeURIComponent(plain(edge));
      out.push(
        jsonRequest(op, 'edge-value', `?${q.name}=${short(v, 40)}`, parts, validBody(parts), {
          query: `${q.name}=${v}`,
        }),
      );
    }
    const valid = plain(exampleOf(doc(), q.schema, exampleHints(), q.name));
    const parts = validParts(op, rnd);
    const query = `${q.name}=${encodeURIComponent(valid)}&${q.name}=${pick(rnd, queryValues)}`;
    out.push(jsonRequest(op, 'duplicate-query', `?${short(query, 60)}`, parts, validBody(parts), { query }));
  }
  for (let i = 0; i < 2; i++) {
    const parts = validParts(op, rnd);
    const name = pick(rnd, queryNames);
    const query = `${name}=${pick(rnd, queryValues)}&${name}=1&${pick(rnd, queryNames)}=${pick(rnd, queryValues)}`;
    out.push(jsonRequest(op, 'odd-query', `?${short(query, 60)}`, parts, validBody(parts), { query }));
  }
  // Every operation is asked once for text/plain, once for another media type.
  for (const accept of ['text/plain', pick(rnd, acceptValues)]) {
    const parts = validParts(op, rnd);
    const headers = {
      'x-correlation-id': pick(rnd, headerValues),
      accept,
      ...(op.method === 'post' ? { 'idempotency-key': pick(rnd, headerValues) } : {}),
    };
    const note = Object.entries(headers)
      .map(([k, v]) => `${k}: ${short(v, 30)}`)
      .join(', ');
    out.push(jsonRequest(op, 'headers', note, parts, validBody(parts), { headers }));
  }
  return out;
}

/** Hostile JSON bodies (operations that take one). */
function jsonBodyCases(op: Operation, rnd: Rnd): FuzzRequest[] {
  const out: FuzzRequest[] = [];
  const base = () => {
    const parts = validParts(op, rnd);
    const value = parts.body!;
    return { parts, value, locs: locationsOf(doc(), value, op.body!.schema) };
  };
  const mutated = (kind: string, make: (b: ReturnType<typeof base>) => Mutation) => {
    const b = base();
    const m = make(b);
    out.push(jsonRequest(op, kind, m.note, b.parts, m.value));
  };

  mutated('lone-surrogate', (b) => mutations.surrogate(rnd, b.value, b.locs, false));
  mutated('lone-surrogate', (b) => mutations.surrogate(rnd, b.value, b.locs, true));
  mutated('nul', (b) => mutations.nul(rnd, b.value, b.locs, false));
  mutated('nul', (b) => mutations.nul(rnd, b.value, b.locs, true));
  mutated('odd-key', (b) => mutations.oddKey(rnd, b.value, b.locs.slice(0, 1), false)); // at the top level
  mutated('odd-key', (b) => mutations.oddKey(rnd, b.value, b.locs, false));
  mutated('odd-key', (b) => mutations.oddKey(rnd, b.value, b.locs, true));
  mutated('wrong-type', (b) => mutations.wrongType(rnd, b.value, b.locs));
  mutated('wrong-type', (b) => mutations.wrongType(rnd, b.value, b.locs));
  mutated('huge-number', (b) => mutations.hugeNumber(rnd, b.value, b.locs));
  mutated('huge-number', (b) => mutations.hugeNumber(rnd, b.value, b.locs));
  mutated('huge-number', (b) => mutations.hugeNumber(rnd, b.value, b.locs));
  mutated('long-string', (b) => mutations.longString(rnd, b.value, b.locs));
  // Edge values, systematically on a full body: every field gets one, every field of a format
  // (dates, times, UUIDs, e-mail addresses) or with a pattern gets all of its own.
  for (const loc of locationsOf(doc(), validParts(op, rnd, true).body!, op.body!.schema)) {
    if (loc.node !== 'scalar' || !loc.schema) continue;
    const name = String(loc.path.at(-1));
    const values = [...edgeValuesOf(doc(), loc.schema, exampleHints(), name), ...(edgesByName[name] ?? [])];
    const all = loc.schema.format !== undefined || loc.schema.pattern !== undefined || name in edgesByName;
    for (const v of all ? values : [pick(rnd, values)]) {
      const parts = validParts(op, rnd, true);
      const note = `${describePath('body', loc.path)} = ${literal(v)} (edge, full body)`;
      out.push(jsonRequest(op, 'edge-value', note, parts, setAt(parts.body!, loc.path, v)));
    }
  }
  mutated('long-string', (b) => mutations.longString(rnd, b.value, b.locs, ['y'.repeat(1_100_000)])); // past the body limit

  // Nesting: exactly the documented 32 levels, one past, and far beyond; arrays or objects.
  for (const [total, label] of [
    [32, 'at the limit'],
    [33, 'one past the limit'],
    [100_000, 'far beyond'],
  ] as const) {
    mutated('deep-nesting', (b) => {
      const loc = pick(rnd, b.locs);
      const arrays = rnd() < 0.5;
      // Nested objects far beyond stop at 20,000 levels (100 KB), arrays go all the way (200 KB).
      const levels = Math.max(1, arrays ? total - loc.depth : Math.min(total - loc.depth, 20_000));
      const nest = arrays ? nestedArrays(levels) : nestedObjects(levels);
      return {
        value: setAt(b.value, loc.path, nest),
        note: `${describePath('body', loc.path)} nests ${levels} levels (${label}: ${loc.depth + levels} in all)`,
      };
    });
  }
  // Keys per object: exactly 1000, one past, and far beyond.
  for (const total of [1000, 1001, 20_000]) {
    mutated('many-keys', (b) => {
      const loc = pick(rnd, placesFor(b.locs, 'object'));
      const own = loc.node === 'absent' ? 0 : (entriesOf(getAt(b.value, loc.path)) ?? []).length;
      return {
        value: withEntries(b.value, loc, fillerEntries(total - own)),
        note: `${describePath('body', loc.path)} holds ${total} keys`,
      };
    });
  }
  mutated('array-for-object', (b) => ({ value: [b.value], note: 'body = [valid body]' }));
  mutated('array-for-object', (b) => {
    const loc = pick(
      rnd,
      placesFor(b.locs, 'object').filter((l) => l.node === 'object' && l.path.length > 0),
    );
    if (!loc) return { value: [], note: 'body = []' };
    return {
      value: setAt(b.value, loc.path, [getAt(b.value, loc.path)!]),
      note: `${describePath('body', loc.path)} = [object]`,
    };
  });
  mutated('object-for-array', (b) => {
    const loc = pick(rnd, placesFor(b.locs, 'array'));
    const found = getAt(b.value, loc.path);
    const items = Array.isArray(found) ? (found as FuzzJson[]) : found === undefined ? [] : [found];
    const obj = new JsonPairs(items.map((v, i) => [String(i), v]));
    return { value: setAt(b.value, loc.path, obj), note: `${describePath('body', loc.path)} = {"0": …}` };
  });

  for (const text of [pick(rnd, emptyBodies), pick(rnd, emptyBodies)]) {
    const parts = validParts(op, rnd);
    out.push(jsonRequest(op, 'empty-body', `body = ${short(text)}`, parts, Buffer.from(text)));
  }
  {
    const parts = validParts(op, rnd);
    out.push(jsonRequest(op, 'empty-body', 'no body, no content type', parts, Buffer.alloc(0), { contentType: null }));
  }
  {
    const parts = validParts(op, rnd);
    const text = pick(rnd, malformedJson);
    out.push(jsonRequest(op, 'malformed-json', `body = ${short(text)}`, parts, Buffer.from(text)));
  }
  for (let i = 0; i < 2; i++) {
    const b = base();
    const loc = pick(rnd, placesFor(b.locs, 'string'));
    const bytes = pick(rnd, invalidUtf8);
    const body = withBytes(setAt(b.value, loc.path, `a${byteMarker}b`), bytes);
    out.push(
      jsonRequest(
        op,
        'invalid-utf8',
        `${describePath('body', loc.path)} holds bytes ${hexBytes(bytes)}`,
        b.parts,
        body,
      ),
    );
  }
  {
    const b = base();
    const text = toJsonText(b.value);
    const variants: [string, Buffer][] = [
      ['UTF-16LE with BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])],
      ['UTF-8 BOM first', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])],
      ['latin1 bytes', Buffer.from(text.replace('fuzz', 'fuzzß'), 'latin1')],
    ];
    const [label, body] = pick(rnd, variants);
    out.push(jsonRequest(op, 'invalid-utf8', `whole body: ${label}`, b.parts, body));
  }
  for (const contentType of [pick(rnd, contentTypes), pick(rnd, contentTypes), pick(rnd, contentTypes)]) {
    const b = base();
    out.push(
      jsonRequest(op, 'content-type', `content-type: ${contentType ?? '(none)'}`, b.parts, b.value, { contentType }),
    );
  }
  // Generated: two to four mutations at once, drawn from every kind above that keeps JSON text.
  const kinds = Object.values(mutations);
  for (let i = 0; i < 6; i++) {
    const b = base();
    let value: FuzzJson = b.value;
    const notes: string[] = [];
    const count = 2 + Math.floor(rnd() * 3);
    for (let j = 0; j < count; j++) {
      const locs = locationsOf(doc(), value, op.body!.schema);
      const m: Mutation = pick(rnd, kinds)(rnd, value, locs);
      value = m.value;
      notes.push(m.note);
    }
    out.push(jsonRequest(op, 'generated', notes.join('; '), b.parts, value));
  }
  return out;
}

/** Hostile form bodies and client authentication (the token endpoint). */
function formBodyCases(op: Operation, rnd: Rnd): FuzzRequest[] {
  const out: FuzzRequest[] = [];
  const client = suite.demo.clients.all!;
  const add = (
    kind: string,
    note: string,
    pairs: FormPairs | Buffer,
    options: Parameters<typeof jsonRequest>[5] = {},
  ) => {
    const parts = validParts(op, rnd);
    const body = Buffer.isBuffer(pairs) ? pairs : Buffer.from(formText(pairs));
    out.push(jsonRequest(op, kind, note, parts, body, options));
  };
  const valid = () => formPairsOf(validParts(op, rnd).body!);
  const fieldNames = Object.keys(mainBranch(doc(), op.body!.schema).properties ?? {});
  const fieldValues = [
    ...queryValues,
    encodeURIComponent('x'.repeat(100_000)),
    encodeURIComponent(`cis_00000000_${'A'.repeat(43)}`),
    '00000000-0000-0000-0000-000000000000',
    'x',
    encodeURIComponent('appointments.read appointments.read'),
    encodeURIComponent('appointments.read\tappointments.write'),
    'openid',
  ];
  for (const name of fieldNames) {
    for (const v of [pick(rnd, fieldValues), pick(rnd, fieldValues), pick(rnd, fieldValues)]) {
      const pairs = valid().filter(([k]) => k !== name);
      add('form-value', `${name}=${short(v, 40)}`, [...pairs, [name, v]]);
    }
    add('duplicate-field', `${name} twice`, [...valid(), [name, pick(rnd, fieldValues)]]);
  }
  for (let i = 0; i < 3; i++) {
    const name = pick(rnd, queryNames);
    add('odd-field', `field ${short(name, 40)}`, [...valid(), [name, pick(rnd, queryValues)]]);
  }
  add('many-fields', '2000 fields', [...valid(), ...fillerEntries(2000).map(([k]): [string, string] => [k, '1'])]);
  for (const text of ['', '&&&', '=', '==', '%', '%zz=1', 'grant_type']) {
    add('empty-body', `body = ${short(text)}`, Buffer.from(text));
  }
  for (let i = 0; i < 2; i++) {
    const bytes = pick(rnd, invalidUtf8);
    const text = formText(valid().map(([k, v]) => (k === 'client_secret' ? [k, `a${byteMarker}b`] : [k, v])));
    const at = text.indexOf(byteMarker);
    const body = Buffer.concat([
      Buffer.from(text.slice(0, at)),
      Buffer.from(bytes),
      Buffer.from(text.slice(at + byteMarker.length)),
    ]);
    add('invalid-utf8', `client_secret holds bytes ${hexBytes(bytes)}`, body);
  }
  for (const contentType of [
    'application/json',
    'text/plain',
    `${formMedia}; charset=latin1`,
    'multipart/form-data; boundary=x',
    null,
  ]) {
    add('content-type', `content-type: ${contentType ?? '(none)'}`, valid(), { contentType });
  }
  add('content-type', 'a JSON body', Buffer.from(JSON.stringify({ grant_type: 'client_credentials' })), {
    contentType: 'application/json',
  });
  // Client authentication by HTTP Basic, hostile.
  const basic = (raw: Buffer | string) => `Basic ${Buffer.from(raw).toString('base64')}`;
  const authorizations = [
    'Basic',
    'Basic !!!',
    basic('\u0000:\u0000'),
    basic(':'),
    basic('no-colon'),
    basic('%ZZ:%ZZ'),
    basic(`%E0%A4%A:${client.apiKey}`),
    basic(Buffer.from([0xff, 0xfe, 0x3a, 0xff])),
    basic(`${client.clientId}:${'x'.repeat(3000)}`),
    basic(`${'__proto__'}:${client.apiKey}`),
    `Basic ${'A'.repeat(3000)}`,
    `Bearer ${client.apiKey}`,
  ];
  for (const authorization of [pick(rnd, authorizations), pick(rnd, authorizations), pick(rnd, authorizations)]) {
    add('basic-auth', `authorization: ${short(authorization, 60)}`, [['grant_type', 'client_credentials']], {
      headers: { authorization },
    });
  }
  add('basic-auth', 'Basic and form credentials at once', valid(), {
    headers: { authorization: basic(`${client.clientId}:${client.apiKey}`) },
  });
  return out;
}

// --- The run ------------------------------------------------------------------------------------

/** The last answer fetch saw, so a response the API client refuses can still be reported. */
type Answer = { status: number; text: string; requestId: string | null };
let lastAnswer: Answer | undefined;

async function send(r: FuzzRequest): Promise<Outcome> {
  lastAnswer = undefined;
  try {
    // A 503 with Retry-After says a dependency was away (the shared broker timing out a produce
    // on the loaded CI machine), not that the input broke anything: sent again, as clients do.
    // An input that breaks the gateway answers 5xx again, and still fails the test.
    const res = await untilNotRefused(
      () => suite.api.request(r.method, r.path, { headers: r.headers, rawBody: r.body }),
      scaled(30_000),
      { only503: true },
    );
    return { status: res.status, text: res.text, requestId: res.headers.get('x-request-id') };
  } catch (err) {
    const message = (err as Error).message;
    // Set by the fetch spy while the request ran (TypeScript cannot see that).
    const seen = lastAnswer as Answer | undefined;
    if (seen) return { ...seen, shapeError: message.split('\n')[0] };
    return { transportError: `${message} ${String((err as { cause?: unknown }).cause ?? '')}`.trim() };
  }
}

function describeRequest(r: FuzzRequest): string {
  const contentType = r.headers['content-type'];
  const excerpt = r.body ? short(r.body.toString('utf8'), 300) : '(none)';
  return [
    `${r.method.toUpperCase()} ${r.path.length > 200 ? `${r.path.slice(0, 200)}… (${r.path.length} chars)` : r.path}`,
    `    [${r.kind}] ${r.note}`,
    `    content-type: ${contentType ?? '(none)'}; body (${r.body?.length ?? 0} bytes): ${excerpt}`,
  ].join('\n');
}

function serverErrors(requestId: string | null | undefined): string[] {
  if (!requestId) return [];
  return suite.gateway
    .logLines()
    .filter((l) => l.requestId === requestId && Number(l.level) >= 50)
    .map((l) => {
      const err = l.err as { type?: string; message?: string; stack?: string } | undefined;
      const frame = err?.stack?.split('\n').find((s) => s.includes('/src/'));
      return `${String(l.msg)}: ${err?.type ?? ''} ${err?.message ?? ''}${frame ? ` (${frame.trim()})` : ''}`;
    });
}

const errorCode = (o: Outcome): string => {
  try {
    const body = JSON.parse(o.text ?? '') as { error?: string | { code?: string } };
    return typeof body.error === 'string' ? body.error : (body.error?.code ?? '');
  } catch {
    return '(not JSON)';
  }
};

/** The API client's complaint without the parts that differ per request (ids, bodies). */
function shapeProblem(o: Outcome): string {
  const m = o.shapeError!;
  if (m.startsWith('body of')) return `${o.status} ${errorCode(o)}: body not in the documented schema`;
  if (m.includes('is not documented')) return `${o.status} ${errorCode(o)}: status not documented`;
  if (m.startsWith('media type')) return `media type ${/to include '([^']+)'/.exec(m)?.[1] ?? '?'} not documented`;
  return m.slice(0, 120);
}

type Failure = { request: FuzzRequest; outcome: Outcome; problem: string; log: string[] };

/** Failures grouped by operation and what went wrong; the smallest request of each group first. */
function report(failures: Failure[]): string {
  const groups = new Map<string, Failure[]>();
  for (const f of failures) {
    // Values quoted in a log message (timestamps, ids) differ per request: not part of the group.
    const key = `${f.request.op.id} | ${f.problem} | ${(f.log[0] ?? '').replace(/"[^"]*"/g, '"…"')}`;
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const out = [`${failures.length} failing answers in ${groups.size} distinct groups:`];
  for (const [key, group] of groups) {
    const f = [...group].sort((a, b) => (a.request.body?.length ?? 0) - (b.request.body?.length ?? 0))[0]!;
    out.push(
      `\n● ${key}  (×${group.length}; kinds: ${[...new Set(group.map((g) => g.request.kind))].join(', ')})`,
      `  ${describeRequest(f.request)}`,
      `    answer: ${f.outcome.status ?? '-'} ${short(f.outcome.text ?? f.outcome.transportError ?? '', 400)}`,
      ...(f.outcome.shapeError ? [`    api client: ${f.outcome.shapeError}`] : []),
      ...f.log.map((l) => `    server log: ${l}`),
    );
  }
  return out.join('\n');
}

/** One valid request of op against fresh fixtures where a valid call uses one up. */
async function validRequest(op: Operation, rnd: Rnd, full = false): Promise<FuzzRequest> {
  const parts = validParts(op, rnd, full);
  if (op.id === 'cancelAppointmentRequest') {
    parts.pathValues.id = await submitAppointment(rnd);
  }
  // A fresh endpoint each time: a hostile DELETE may have removed the fixture's.
  if (op.template.startsWith('/api/v1/webhook-endpoints/{endpointId}'))
    parts.pathValues.endpointId = await webhookEndpoint();
  const body = op.body?.media === 'form' ? Buffer.from(formText(formPairsOf(parts.body!))) : parts.body;
  return jsonRequest(op, 'valid', full ? 'a valid request with every field' : 'a valid request', parts, body);
}

/** A new webhook endpoint of the demo client (one per path, and one per valid request). */
async function webhookEndpoint(): Promise<string> {
  const created = await createEndpoint(suite.pool, {
    tenantId: suite.demo.tenantId,
    clientId: suite.demo.clients.all!.clientId,
    url: 'https://93.184.215.14/hooks',
    eventTypes: '*',
  });
  return created.endpointId;
}

async function submitAppointment(rnd: Rnd): Promise<string> {
  const submit = operations().find((o) => o.id === 'submitAppointmentRequest')!;
  const parts = validParts(submit, rnd);
  const res = await send(
    jsonRequest(submit, 'fixture', 'an appointment request to read and cancel', parts, parts.body!),
  );
  if (res.status !== 202) throw new Error(`could not submit an appointment request: ${res.status} ${res.text}`);
  return JSON.parse(res.text!).id as string;
}

describe('fuzzing every operation of the OpenAPI document', () => {
  // Valid requests and fixtures draw from their own sequence, so the hostile requests depend only
  // on the seed (not on which tests ran before).
  const rnd = mulberry32(seed ^ 0x9e3779b9);

  beforeAll(async () => {
    const caller = { tenantId: suite.demo.tenantId, clientId: suite.demo.clients.all!.clientId };
    const wo = suite.demo.workOrders[0]!;
    const hook = await webhookEndpoint();
    const event = await sendTestEvent(suite.pool, (await findEndpoint(suite.pool, { endpointId: hook }))!);
    fixtures = {
      token: await accessToken(suite.api, suite.demo.clients.all!),
      eventId: event.id,
      pathValues: {
        '/api/v1/import-jobs/{id} id': String(await insertImportJob(suite.pool, caller)),
        '/api/v1/import-jobs/{id}/route-suggestion id': String(await insertFinishedImportJob(suite.pool, caller)),
        '/api/v1/route-suggestions/{id} id': await insertRouteSuggestion(suite.pool, caller),
        '/api/v1/connect/work-orders/{workOrderId}/materials workOrderId': String(wo.workOrderId),
        '/api/v1/connect/work-orders/by-external-id/{externalWorkOrderId}/materials externalWorkOrderId':
          encodeURIComponent(wo.externalWorkOrderId),
      },
    };
    for (const suffix of [
      '',
      '/disable',
      '/enable',
      '/rotate-secret',
      '/test',
      '/attempts',
      '/replay',
      '/replay-failed',
    ])
      fixtures.pathValues[`/api/v1/webhook-endpoints/{endpointId}${suffix} endpointId`] = await webhookEndpoint();
    const apr = await submitAppointment(rnd);
    for (const suffix of ['', '/status', '/cancel'])
      fixtures.pathValues[`/connect/v1/appointment-requests/{id}${suffix} id`] = apr;

    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const res = await realFetch(input, init);
      const text = await res.clone().text();
      lastAnswer = { status: res.status, text, requestId: res.headers.get('x-request-id') };
      return res;
    });
  });
  afterAll(() => {
    vi.restoreAllMocks();
  });

  it('reaches every operation with a valid request first (so the mutations start from valid input)', async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(20);
    const refused: string[] = [];
    for (const [op, full] of ops.flatMap((o) =>
      o.body ? [[o, false] as const, [o, true] as const] : [[o, false] as const],
    )) {
      const r = await validRequest(op, rnd, full);
      const res = await send(r);
      if (!(res.status! >= 200 && res.status! < 300) || res.shapeError) {
        refused.push(
          `${op.id}: ${res.status} ${res.shapeError ?? ''} ${short(res.text ?? res.transportError ?? '', 300)}\n${describeRequest(r)}`,
        );
      }
    }
    expect(refused, refused.join('\n')).toEqual([]);
  });

  it(
    'answers every hostile request below 500, in the documented shape',
    async () => {
      const fuzzRnd = mulberry32(seed);
      sequence = 100_000; // external ids of this test's bodies: fuzz-100001, …
      const requests = operations().flatMap((op) => [
        ...addressCases(op, fuzzRnd),
        ...(op.body?.media === 'json' ? jsonBodyCases(op, fuzzRnd) : []),
        ...(op.body?.media === 'form' ? formBodyCases(op, fuzzRnd) : []),
      ]);
      const failures: Failure[] = [];
      const statuses = new Map<number, number>();
      for (const r of requests) {
        const outcome = await send(r);
        if (logFile) appendFileSync(logFile, `${outcome.status ?? '-'} ${errorCode(outcome)} ${describeRequest(r)}\n`);
        if (outcome.status !== undefined) statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
        const problem =
          outcome.transportError !== undefined
            ? 'no answer'
            : outcome.status! >= 500
              ? `status ${outcome.status} ${errorCode(outcome)}`
              : outcome.shapeError !== undefined
                ? shapeProblem(outcome)
                : undefined;
        if (problem) failures.push({ request: r, outcome, problem, log: serverErrors(outcome.requestId) });
      }
      const kinds = new Set(requests.map((r) => r.kind));
      const summary =
        `fuzz: seed ${seed}, ${requests.length} requests over ${new Set(requests.map((r) => r.op.id)).size} operations, ` +
        `${kinds.size} kinds (${[...kinds].join(', ')}); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`;
      const errorLines = suite.gateway.logLines().filter((l) => Number(l.level) >= 50).length;
      console.log(`${summary}; error-level log lines: ${errorLines}`);
      expect(failures.length, failures.length ? report(failures) : '').toBe(0);
    },
    scaled(600_000),
  );

  it('still answers afterwards: /livez, and a valid request of every operation', async () => {
    const live = await send(
      await validRequest(
        operations().find((o) => o.template === '/livez')!,
        rnd,
      ),
    );
    expect(live.status).toBe(200);
    fixtures.token = await accessToken(suite.api, suite.demo.clients.all!);
    sequence = 200_000;
    const refused: string[] = [];
    for (const op of operations()) {
      const r = await validRequest(op, rnd);
      const res = await send(r);
      if (!(res.status! >= 200 && res.status! < 300) || res.shapeError) {
        refused.push(
          `${op.id}: ${res.status} ${res.shapeError ?? ''} ${short(res.text ?? res.transportError ?? '', 300)}`,
        );
      }
    }
    expect(refused, refused.join('\n')).toEqual([]);
  });
});
