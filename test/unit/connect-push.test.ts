import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { cutBatches, type Batch, type BatchItem } from '../../src/push/batches.js';
import { csvRowToTarget } from '../../src/push/csv-target.js';
import { createHttp, FatalError, retryAfterMs } from '../../src/push/http.js';
import { outcomeOf } from '../../src/push/outcome.js';
import { parsePushOptions } from '../../src/push/options.js';
import { push } from '../../src/push/run.js';
import { readRecords, type InputRecord } from '../../src/push/read-records.js';

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const target = (i: number, name = `Site ${i}`) => ({
  externalId: `t-${i}`,
  name,
  coordinates: { latitude: 52.5, longitude: 13.4 },
});
async function* records(targets: unknown[]): AsyncGenerator<InputRecord> {
  for (const [i, t] of targets.entries()) yield { line: i + 1, target: t };
}
const batchesOf = (items: BatchItem[]) => items.flatMap((i) => ('batch' in i ? [i.batch] : []));

describe('connect-push batches', () => {
  it('cuts to the target and byte limits, in input order, each body valid JSON within the limit', async () => {
    const targets = Array.from({ length: 25 }, (_, i) => target(i));
    const byCount = batchesOf(await collect(cutBatches(records(targets), 'erp', { maxTargets: 10, maxBytes: 1e6 })));
    expect(byCount.map((b) => b.targets.length)).toEqual([10, 10, 5]);
    const maxBytes = 400;
    const byBytes = batchesOf(await collect(cutBatches(records(targets), 'erp', { maxTargets: 100, maxBytes })));
    expect(byBytes.length).toBeGreaterThan(3);
    for (const b of byBytes) {
      expect(b.body.length).toBeLessThanOrEqual(maxBytes);
      expect(JSON.parse(b.body.toString())).toEqual({ sourceSystem: 'erp', targets: b.targets });
    }
    expect(byBytes.flatMap((b) => b.lines)).toEqual(targets.map((_, i) => i + 1));
  });

  it('derives the same keys from the same input, different keys for another position or body', async () => {
    const targets = Array.from({ length: 30 }, (_, i) => target(i));
    const cut = async (t: unknown[]) =>
      batchesOf(await collect(cutBatches(records(t), 'erp', { maxTargets: 10, maxBytes: 1e6 }))).map(
        (b) => b.idempotencyKey,
      );
    const [a, b] = [await cut(targets), await cut(targets)];
    expect(a).toEqual(b);
    expect(new Set(a).size).toBe(3);
    const changed = await cut(targets.map((t, i) => (i === 15 ? target(15, 'renamed') : t)));
    expect(changed[0]).toBe(a[0]);
    expect(changed[1]).not.toBe(a[1]);
    for (const key of a) expect(key).toMatch(/^push-[A-Za-z0-9_-]{43}$/);
  });

  it('rejects a target larger than any batch, and passes unreadable records on as rejects', async () => {
    async function* input(): AsyncGenerator<InputRecord> {
      yield { line: 1, target: target(1) };
      yield { line: 2, target: target(2, 'x'.repeat(500)) };
      yield { line: 3, error: 'not JSON', raw: '{' };
    }
    const items = await collect(cutBatches(input(), 'erp', { maxTargets: 10, maxBytes: 300 }));
    expect(items.flatMap((i) => ('reject' in i ? [i.reject.line] : []))).toEqual([2, 3]);
    expect(batchesOf(items).map((b) => b.lines)).toEqual([[1]]);
  });
});

describe('connect-push input', () => {
  it('reads NDJSON with line numbers, skipping blank lines and reporting bad ones', async () => {
    const got = await collect(readRecords(Readable.from(['{"a":1}\n\n{oops\n', '{"b":2}\n']), 'ndjson'));
    expect(got).toEqual([
      { line: 1, target: { a: 1 } },
      { line: 3, error: expect.stringMatching(/^not JSON/), raw: '{oops' },
      { line: 4, target: { b: 2 } },
    ]);
  });

  it('reads CSV rows as targets: nested columns, numbers, tags, JSON cells; a malformed row is a reject', async () => {
    const csv =
      'externalId,name,latitude,longitude,address.city,tags,priority,metadata\n' +
      't-1,Boiler,52.5,13.4,Berlin,a|b,2,"{""floor"":1}"\n' +
      't-2,Short row\n' +
      't-3,Roof,,,Potsdam,,,\n';
    const got = await collect(readRecords(Readable.from([csv]), 'csv'));
    expect(got[0]).toEqual({
      line: 2,
      target: {
        externalId: 't-1',
        name: 'Boiler',
        coordinates: { latitude: 52.5, longitude: 13.4 },
        address: { city: 'Berlin' },
        tags: ['a', 'b'],
        priority: 2,
        metadata: { floor: 1 },
      },
    });
    expect(got[1]).toMatchObject({ error: expect.stringMatching(/^not a CSV row/) });
    expect(got[2]).toEqual({ line: 4, target: { externalId: 't-3', name: 'Roof', address: { city: 'Potsdam' } } });
    expect(Object.getPrototypeOf(csvRowToTarget({ '__proto__.x': '1' }))).toBeNull();
  });
});

describe('connect-push answers', () => {
  const batch: Batch = {
    index: 0,
    lines: [5, 6, 7],
    targets: [target(0), { externalId: 'bad-1', name: 'no place' }, { externalId: 'bad-2' }],
    body: Buffer.from('{}'),
    idempotencyKey: 'k',
  };
  const answer = (status: number, body: unknown) => ({ status, body, headers: new Headers() });
  const noPlace = { index: 1, field: 'address', message: 'give an address, coordinates or both' };
  /** The service's 200: an import job of this batch, one target accepted, two rejected. */
  const importJob = (replay: boolean, errors: object[], errorsOmitted: number) =>
    answer(200, {
      importJobId: 9,
      idempotentReplay: replay,
      counts: { accepted: 1, rejected: 2 },
      errors,
      errorsOmitted,
    });

  it('maps a 200 import job’s item errors to input lines; finds unlisted rejects with the shared schema', () => {
    const listed = outcomeOf(batch, importJob(true, [noPlace, { index: 2, field: 'name', message: 'Required' }], 0));
    expect(listed).toMatchObject({ accepted: 1, importJobId: 9, replay: true, undelivered: 0 });
    expect(listed.rejected.map((r) => [r.line, r.externalId, r.reasons[0]!.field])).toEqual([
      [6, 'bad-1', 'address'],
      [7, 'bad-2', 'name'],
    ]);
    const omitted = outcomeOf(batch, importJob(false, [noPlace], 1));
    expect(omitted.rejected.map((r) => r.line)).toEqual([6, 7]);
    expect(omitted.rejected[1]!.reasons.some((r) => r.field === 'name')).toBe(true);
  });

  it('rejects every target of a 400 batch with its field errors, and counts other failures as undelivered', () => {
    const refused = outcomeOf(
      batch,
      answer(400, {
        error: { code: 'validation_failed', message: 'No target…', fieldErrors: { 'targets[2].name': ['Required'] } },
      }),
    );
    expect(refused.rejected.map((r) => [r.line, r.reasons[0]!.message])).toEqual([
      [5, 'validation_failed: No target…'], // valid here: the service's message
      [6, 'give an address, coordinates or both'], // unlisted: found with the shared schema
      [7, 'Required'],
    ]);
    const busy = outcomeOf(batch, answer(503, { error: { code: 'service_busy', message: 'busy' } }));
    expect(busy).toMatchObject({ undelivered: 3, rejected: [], failure: expect.stringContaining('503') });
  });
});

describe('connect-push retries', () => {
  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMs(null)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
  });

  it('sends a request answered 429 again, the same bytes, no sooner than its Retry-After', async () => {
    const seen: { at: number; body: string; key: string | undefined }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ at: Date.now(), body, key: req.headers['idempotency-key'] as string | undefined });
        if (seen.length === 1) res.writeHead(429, { 'Retry-After': '1' }).end('{"error":{"message":"slow down"}}');
        else res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const http = createHttp(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        'key',
        new AbortController().signal,
      );
      const res = await http.request('POST', '/x', {
        body: Buffer.from('{"a":1}'),
        headers: { 'Idempotency-Key': 'k1' },
      });
      expect(res).toMatchObject({ status: 200, body: { ok: true } });
      expect(seen.map((s) => [s.body, s.key])).toEqual([
        ['{"a":1}', 'k1'],
        ['{"a":1}', 'k1'],
      ]);
      expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1000);
      expect(http.retries()).toEqual({ '429': 1 });
    } finally {
      server.close();
    }
  });

  it('counts what it sent again by why: no answer, then a 503 without Retry-After (the schedule)', async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      req.resume();
      if (requests === 1) req.socket.destroy();
      else if (requests === 2) res.writeHead(503).end('{"error":{"message":"busy"}}');
      else res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const http = createHttp(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        'key',
        new AbortController().signal,
      );
      expect(await http.request('GET', '/x')).toMatchObject({ status: 200, body: { ok: true } });
      expect(http.retries()).toEqual({ 'no answer': 1, '503': 1 });
    } finally {
      server.close();
    }
  });
});

describe('connect-push refusals', () => {
  /** A server answering every request with `status` and `body`; counts the requests. */
  async function refusing(status: number, body: unknown) {
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(status, { 'Content-Type': 'application/json', Connection: 'close' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const http = createHttp(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      'key',
      new AbortController().signal,
    );
    return { http, requests: () => requests, close: () => server.close() };
  }

  it('401: stops at once (one request, no retry) with a FatalError about the key', async () => {
    const s = await refusing(401, { error: { code: 'invalid_credential', message: 'The API key is not known.' } });
    try {
      const started = Date.now();
      const err = await s.http.request('POST', '/x', { body: Buffer.from('{}') }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FatalError);
      expect((err as Error).message).toMatch(/API key \(401 invalid_credential: The API key is not known\.\)/);
      expect(s.requests()).toBe(1);
      expect(s.http.retries()).toEqual({});
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      s.close();
    }
  });

  it('403: stops at once, naming the scope the key lacks (details.requiredScope)', async () => {
    const s = await refusing(403, {
      error: {
        code: 'insufficient_scope',
        message: 'This operation needs the scope import_jobs.read.',
        details: { requiredScope: 'import_jobs.read' },
      },
    });
    try {
      const err = await s.http.request('GET', '/api/v1/import-jobs?take=1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FatalError);
      expect((err as Error).message).toMatch(/^the API key lacks the scope import_jobs\.read \(403/);
      expect(s.requests()).toBe(1);
    } finally {
      s.close();
    }
  });
});

describe('connect-push stopped midway', () => {
  it('a key refused after some batches: exit-2 error saying how many targets were accepted before', async () => {
    const openApi = {
      paths: {
        '/api/v1/inbound/targets/batch': {
          post: {
            'x-max-body-bytes': 1_000_000,
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Batch' } } } },
          },
        },
      },
      components: { schemas: { Batch: { properties: { targets: { maxItems: 2 } } } } },
    };
    let batches = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const json = (status: number, body: unknown) =>
          res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
        if (req.url === '/openapi.json') return json(200, openApi);
        batches++;
        if (batches === 1)
          return json(200, {
            importJobId: 1,
            idempotentReplay: false,
            counts: { accepted: 2, rejected: 0 },
            errors: [],
            errorsOmitted: 0,
          });
        json(401, { error: { code: 'revoked_credential', message: 'The API key was revoked.' } });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = await mkdtemp(join(tmpdir(), 'push-stopped-'));
    try {
      const file = join(dir, 'in.ndjson');
      await writeFile(file, [1, 2, 3, 4, 5, 6].map((i) => JSON.stringify(target(i))).join('\n'));
      const options = parsePushOptions(
        [file, '--concurrency', '1', '--url', `http://127.0.0.1:${(server.address() as AddressInfo).port}`],
        { CONNECT_API_KEY: 'k', CONNECT_SOURCE_SYSTEM: 'erp' },
        false,
      )!;
      const err = await push(options, new AbortController().signal).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FatalError);
      expect((err as Error).message).toMatch(/\(401 revoked_credential: .*; 2 targets were accepted before that/);
      expect(batches).toBe(2); // nothing more after the refusal
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
