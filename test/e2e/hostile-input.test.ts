import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { appointmentsWorker } from '../../src/workers/appointments/kind.js';
import { unstorableReason } from '../../src/gateway/http/storable.js';
import { bearer } from '../support/fixtures.js';
import { unstorableKeyName } from '../support/json-fuzz.js';
import { mulberry32 } from '../support/prng.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { accessToken, bearerToken, form, formHeaders, tokenPath } from './oauth-helpers.js';

// Plain client mistakes and hostile bodies: always a 4xx in the documented shape (the API client
// checks every answer against the OpenAPI document), never a 500, and a batch rejects only the
// target that carries the bad text.
const suite = useGatewaySuite({
  workers: [appointmentsWorker],
  env: () => ({ BODY_READ_TIMEOUT_MS: '1000', AUTH_FAILURES_PER_MINUTE: '20' }),
});
const key = () => suite.demo.clients.all!.apiKey;
const auth = () => bearer(key());

/** Every operation with a JSON body, with a path that reaches its handler. */
async function writeOperations(): Promise<{ path: string; headers: Record<string, string> }[]> {
  const wo = suite.demo.workOrders[0]!;
  const token = await accessToken(suite.api, suite.demo.clients.all!);
  const uuidKey = { 'idempotency-key': '6f1c2f44-6a8b-4f5e-9d3c-0b7a1f2e3d4c' };
  return [
    { path: '/api/v1/inbound/targets', headers: auth() },
    { path: '/api/v1/inbound/targets/batch', headers: auth() },
    { path: '/api/connect/jobs', headers: auth() },
    { path: '/api/v1/connect/jobs', headers: auth() },
    { path: `/api/v1/connect/work-orders/${wo.workOrderId}/materials`, headers: auth() },
    {
      path: `/api/v1/connect/work-orders/by-external-id/${encodeURIComponent(wo.externalWorkOrderId)}/materials`,
      headers: auth(),
    },
    { path: '/api/v1/import-jobs/1/route-suggestion', headers: auth() },
    { path: '/connect/v1/appointment-requests', headers: { ...bearerToken(token), ...uuidKey } },
    { path: '/connect/v1/appointment-requests/apr_unknown/cancel', headers: { ...bearerToken(token), ...uuidKey } },
  ];
}

const jsonAuth = () => ({ ...auth(), 'content-type': 'application/json' });

const expect4xx = (res: { status: number; text: string }, what: string) => {
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBeLessThan(500);
};

describe('odd field names', () => {
  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'a top-level body key %s is a 400 on every write operation',
    async (name) => {
      for (const op of await writeOperations()) {
        const res = await suite.api.post(op.path, {
          headers: { ...op.headers, 'content-type': 'application/json' },
          rawBody: `{"${name}": 1}`,
        });
        expect4xx(res, `${name} on ${op.path}`);
      }
    },
  );

  it('query parameters with those names are a 400, and the token endpoint does not call them repeated', async () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const res = await suite.api.get(`/api/v1/import-jobs?${name}=1`, { headers: auth() });
      expect(res.status, res.text).toBe(400);
    }
    const token = await suite.api.post(tokenPath, {
      headers: formHeaders,
      rawBody: `${form({ grant_type: 'client_credentials' })}&constructor=1`,
    });
    expect4xx(token, 'token endpoint');
    expect(token.text).not.toMatch(/repeated/i);
  });
});

type ItemErrors = { errors: { index: number; field: string | null; message: string }[] };

/** Pushes a batch whose first target alone is valid; the answer and the stored job list the same errors, storable. */
async function pushBatchExpectingErrors(targets: readonly unknown[], what = ''): Promise<ItemErrors> {
  const res = await suite.api.post('/api/v1/inbound/targets/batch', {
    headers: jsonAuth(),
    rawBody: JSON.stringify({ sourceSystem: 'hostile', targets }),
  });
  expect(res.status, `${what} ${res.text.slice(0, 500)}`).toBe(200);
  const stored = await suite.api.get(`/api/v1/import-jobs/${res.body.importJobId}`, { headers: auth() });
  expect(stored.status, stored.text).toBe(200);
  expect(stored.body.errors, what).toEqual(res.body.errors);
  for (const e of res.body.errors as ItemErrors['errors']) {
    expect(unstorableReason(e.field ?? ''), `${what} ${JSON.stringify(e.field)}`).toBeNull();
    expect(unstorableReason(e.message), what).toBeNull();
  }
  return res.body as ItemErrors;
}

describe('text PostgreSQL cannot store', () => {
  const loneSurrogate = '"n\\ud800"';

  it('a lone surrogate or NUL in a single push or a job is a 400 naming the field', async () => {
    const target = { sourceSystem: 'hostile', ...makeTargets(1, 'ls')[0] };
    for (const bad of [loneSurrogate, '"a\\u0000b"']) {
      const single = await suite.api.post('/api/v1/inbound/targets', {
        headers: jsonAuth(),
        rawBody: JSON.stringify(target).replace('"Customer site ls-0"', bad),
      });
      expect(single.status, single.text).toBe(400);
      expect(Object.keys(single.body.error.fieldErrors)).toContain('body.name');
    }
  });

  it('in a batch, rejects only the targets with such text, with their index', async () => {
    const targets = makeTargets(4, 'bt');
    const rawBody = JSON.stringify({ sourceSystem: 'hostile', targets })
      .replace('"Customer site bt-1"', loneSurrogate)
      .replace('"Hauptstraße 3"', '"x\\u0000"');
    const res = await suite.api.post('/api/v1/inbound/targets/batch', { headers: jsonAuth(), rawBody });
    expect(res.status, res.text).toBe(200);
    expect(res.body.acceptedCount ?? res.body.counts?.accepted ?? res.body.accepted).toBe(2);
    const errors = res.body.errors as { index: number; field: string }[];
    expect(errors.map((e) => [e.index, e.field])).toEqual([
      [1, 'name'],
      [2, 'address.line1'],
    ]);
  });

  it('a batch whose errors name unstorable field names answers 200 and stores them, escaped', async () => {
    const targets: Record<string, unknown>[] = makeTargets(4, 'fk');
    targets[1]!.metadata = { '\ud800': 1 };
    targets[2]!['x\u0000y'] = 1;
    targets[3]!.address = { ...(targets[3]!.address as object), 'z\udfff': 'a' };
    const job = await pushBatchExpectingErrors(targets);
    expect(job.errors.map((e) => [e.index, e.field])).toEqual([
      [1, 'metadata.\\ud800'],
      [2, 'x\\u0000y'],
      [3, 'address.z\\udfff'],
    ]);
    const single = await suite.api.post('/api/v1/inbound/targets', {
      headers: jsonAuth(),
      rawBody: JSON.stringify({ sourceSystem: 'hostile', ...targets[1] }),
    });
    expect(single.status, single.text).toBe(400);
    expect(Object.keys(single.body.error.fieldErrors)).toEqual(['body.metadata.\\ud800']);
  });

  it('random odd field names anywhere in a target never make a batch fail (property)', async () => {
    const seed = Date.now() % 100_000;
    const rnd = mulberry32(seed);
    const places: ((t: Record<string, any>, key: string) => void)[] = [
      (t, key) => (t.metadata = { ...t.metadata, [key]: 'v' }),
      (t, key) => (t[key] = 1),
      (t, key) => (t.address = { ...t.address, [key]: 'v' }),
      (t, key) => (t.coordinates = { ...t.coordinates, [key]: 0 }),
      (t, key) => (t.timeWindows = [{ start: '2026-11-23T08:00:00Z', end: '2026-11-23T09:00:00Z', [key]: 1 }]),
    ];
    for (let round = 0; round < 5; round++) {
      const targets: Record<string, any>[] = makeTargets(21, `pk${round}`, seed + round);
      for (const t of targets.slice(1)) places[Math.floor(rnd() * places.length)]!(t, unstorableKeyName(rnd));
      const job = await pushBatchExpectingErrors(targets, `seed ${seed}`);
      expect(
        job.errors.map((e) => e.index),
        `seed ${seed}`,
      ).toEqual(targets.slice(1).map((_, i) => i + 1));
    }
  });

  it('a NUL in a path or query value is a 400', async () => {
    const wo = '/api/v1/connect/work-orders/by-external-id/a%00b/materials';
    const token = await accessToken(suite.api, suite.demo.clients.all!);
    for (const res of [
      await suite.api.get('/api/v1/import-jobs?sourceSystem=%00', { headers: auth() }),
      await suite.api.post(wo, { headers: jsonAuth(), rawBody: '{}' }),
      await suite.api.get('/connect/v1/appointment-requests/apr_%00', { headers: bearerToken(token) }),
    ]) {
      expect(res.status, res.text).toBe(400);
    }
  });
});

describe('bytes and shapes', () => {
  it('invalid UTF-8 is a 400 invalid_json, not stored as U+FFFD', async () => {
    const text = JSON.stringify({ sourceSystem: 'hostile', ...makeTargets(1, 'u8')[0] });
    const bytes = Buffer.from(text.replace('Customer site', 'Customer \u00ff site'), 'utf8');
    const at = bytes.indexOf(0xc3);
    bytes[at] = 0xff; // not a UTF-8 lead byte
    const res = await suite.api.post('/api/v1/inbound/targets', {
      headers: { ...auth(), 'content-type': 'application/json' },
      rawBody: bytes,
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('deep nesting and huge objects are a 400, with bounded error lists', async () => {
    const deep = `{"sourceSystem":"x","metadata":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const nested = await suite.api.post('/api/v1/inbound/targets', { headers: jsonAuth(), rawBody: deep });
    expect(nested.status, nested.text).toBe(400);
    expect(nested.body.error.code).toBe('validation_failed');

    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i])));
    const res = await suite.api.post('/api/v1/connect/jobs', { headers: jsonAuth(), rawBody: wide });
    expect(res.status, res.text).toBe(400);
    expect(res.text.length).toBeLessThan(20_000);

    const many = JSON.stringify(Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`k${i}`, i])));
    const listed = await suite.api.post('/api/v1/connect/jobs', { headers: jsonAuth(), rawBody: many });
    expect(listed.status).toBe(400);
    expect(listed.body.error.details.length).toBeLessThanOrEqual(101);
  });

  it('a body that does not arrive within the deadline is cut with 408', async () => {
    const url = new URL('/api/v1/inbound/targets', suite.gateway.url);
    const started = { sent: false };
    const stream = new ReadableStream({
      async pull(controller) {
        if (!started.sent) {
          started.sent = true;
          controller.enqueue(new TextEncoder().encode('{"sourceSystem":'));
        }
        await new Promise((r) => setTimeout(r, 200)); // trickles nothing more
      },
    });
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit).catch((err: Error) => err);
    if (res instanceof Error) throw res;
    expect(res.status).toBe(408);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('request_timeout');
  });
});

describe('webhook endpoint URLs', () => {
  // This suite refuses private targets (the default): accepted URLs name a public IP literal, so
  // nothing waits on DNS.
  const hook = 'https://93.184.215.14/hooks';
  const base = '/api/v1/webhook-endpoints';
  const post = (url: unknown) => suite.api.post(base, { headers: jsonAuth(), body: { url, events: ['all'] } });
  const patch = (id: string, url: unknown) =>
    suite.api.request('patch', `${base}/${id}`, { headers: jsonAuth(), body: { url } });
  const remove = (id: string) => suite.api.request('delete', `${base}/${id}`, { headers: auth() });

  /** A 400 validation_failed naming the url (the edge names unstorable text body.url). */
  const expectUrlRefused = (res: { status: number; text: string; body: any }, what: string) => {
    expect4xx(res, what);
    expect(res.status, what).toBe(400);
    expect(res.body.error.code, what).toBe('validation_failed');
    expect(Object.keys(res.body.error.fieldErrors), what).toEqual([expect.stringMatching(/^(body\.)?url$/)]);
  };

  const hostileUrls: unknown[] = [
    '',
    ' ',
    'nope',
    '/hooks',
    '93.184.215.14/hooks',
    'javascript:alert(1)',
    'data:text/plain,x',
    'file:///etc/passwd',
    'ftp://93.184.215.14/x',
    'ws://93.184.215.14/x',
    'http://',
    'http://[::1',
    'http://a b.example/',
    'http://%00/',
    'https://user:pw@93.184.215.14/',
    'HTTPS://USER@93.184.215.14/',
    `${hook}#fragment`,
    `\t${hook}`,
    `${hook}\t`,
    `\r\n${hook}`,
    `${hook}\r\nX-Injected: 1`,
    `${hook}/a\nb`,
    `\u0000${hook}`,
    `${hook}\u0000`,
    `${hook}/\ud800`,
    `\udfff${hook}`,
    `${hook}/\u007f`,
    `${hook}/\u0085`,
    `${hook}/\u001b[31m`,
    `${hook}/${'x'.repeat(2000)}`,
    `${hook}/${'é'.repeat(400)}`,
    `${hook}/${'\u{1f600}'.repeat(300)}`,
    'http://127.0.0.1/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://2130706433/x',
    'http://0x7f.1/x',
    123,
    null,
    true,
    [],
    {},
    [hook],
  ];

  it('every hostile URL is a 400 naming the url, on create and on change, and changes nothing', async () => {
    const created = await post(hook);
    expect(created.status, created.text).toBe(201);
    const id = created.body.endpointId as string;
    const before = (await suite.api.get(base, { headers: auth() })).body.items.length;
    for (const url of hostileUrls) {
      const what = JSON.stringify(url);
      expectUrlRefused(await post(url), `POST ${what}`);
      expectUrlRefused(await patch(id, url), `PATCH ${what}`);
    }
    expect((await suite.api.get(base, { headers: auth() })).body.items.length).toBe(before);
    expect((await suite.api.get(`${base}/${id}`, { headers: auth() })).body.url).toBe(hook);
    await remove(id);
  });

  it('random URLs are either refused (400) or stored as their normalised href, never a 5xx (property)', async () => {
    const seed = Date.now() % 100_000;
    const rnd = mulberry32(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const schemes = ['https://', 'HTTP://', 'hTTpS:', 'http:\\\\', ' http://', '\thttps://', 'ftp://', ''];
    const hosts = ['93.184.215.14', '93.184.215.14:443', '[2606:2800:21f:cb07:6820:80da:af6b:8b2e]', '127.0.0.1', ''];
    const tail = [
      '/',
      '/a b',
      '/./',
      '/..',
      '?q=1 2',
      '#f',
      '%',
      '%zz',
      'é',
      '\u{1f600}',
      '\ud800',
      '\u0000',
      '\r\n',
      ' ',
      '\u0085',
    ];
    const id = (await post(hook)).body.endpointId as string;
    for (let i = 0; i < 40; i++) {
      const url =
        pick(schemes) + pick(hosts) + Array.from({ length: Math.floor(rnd() * 5) }, () => pick(tail)).join('');
      const what = `seed ${seed}: ${JSON.stringify(url)}`;
      const [created, changed] = [await post(url), await patch(id, url)];
      expect([201, 400], `POST ${what}: ${created.text.slice(0, 300)}`).toContain(created.status);
      expect([200, 400], `PATCH ${what}: ${changed.text.slice(0, 300)}`).toContain(changed.status);
      if (created.status === 400) {
        expectUrlRefused(created, `POST ${what}`);
        expectUrlRefused(changed, `PATCH ${what}`);
        continue;
      }
      expect(changed.status, `PATCH ${what}`).toBe(200);
      const href = new URL(url).href;
      expect(href, what).toMatch(/^https?:\/\//);
      expect(created.body.url, what).toBe(href);
      expect(changed.body.url, what).toBe(href);
      await remove(created.body.endpointId);
    }
    await remove(id);
  });
});

// Last in this file: it leaves this address blocked for the rest of the minute.
describe('unauthenticated floods', () => {
  it('answers an address past its refused-credential allowance 429 without looking keys up', async () => {
    const randomKey = () =>
      `cis_${randomBytes(4).toString('hex')}_${randomBytes(32).toString('base64url').slice(0, 43)}`;
    for (let i = 0; i < 20; i++) {
      const res = await suite.api.get('/api/v1/import-jobs', { headers: bearer(randomKey()) });
      expect(res.status, res.text).toBe(401);
    }
    const blocked = await suite.api.get('/api/v1/import-jobs', { headers: bearer(randomKey()) });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('rate_limited');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
