import { describe, expect, it } from 'vitest';
import { demo } from '../../src/admin/commands/demo.js';
import { lingeringWaitingForRoom } from '../../src/gateway/http/lingering-close.js';
import { admin, bearer, createClientWithKey, setUploadQuota, type Demo } from '../support/fixtures.js';
import { rawUpload } from '../support/raw-upload.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// A refusal costs little (issues 24 and 41): a request refused before its body is read is
// answered with Connection: close; the gateway then reads and discards what the client still
// sends for a bounded while (a lingering close, so that a client writing its whole body first
// reads the answer), at most REFUSED_BODY_DRAIN_BYTES after the answer and for at most
// REFUSED_BODY_DRAIN_MS, the bytes charged to the sender's upload quota, and closes the connection.
// A body without Content-Length is counted against the upload quota as it arrives and cut off
// once past it. Batches up to 1 MiB; a client with a quota of 1 KiB/s has one window of 1 MiB for
// 1024 s, one of 512 KiB/s a window of 1 MiB every 2 s. Where the quota has no room, the discard
// waits for its next window (issue 53), within the same bounds.
const drainBytes = 256 * 1024;
/** What the gateway may read past the bound: the socket read that crosses it, and one more while a chunk is charged. */
const overshoot = 192 * 1024;
let drainMs = 0;
const suite = useGatewaySuite({
  env: () => {
    drainMs = scaled(3000); // longer than a window of 512 KiB/s (2 s)
    return {
      UPLOAD_BYTES_PER_SECOND: String(48 * 1024),
      INBOUND_BATCH_MAX_BYTES: String(1024 * 1024),
      BODY_LIMIT_BYTES: String(16 * 1024),
      REFUSED_BODY_DRAIN_BYTES: String(drainBytes),
      REFUSED_BODY_DRAIN_MS: String(drainMs),
    };
  },
});

const batchPath = '/api/v1/inbound/targets/batch';
const batchBody = (count: number, tag: string) =>
  Buffer.from(JSON.stringify({ sourceSystem: 'refused', targets: makeTargets(count, tag) }));
const json = { 'Content-Type': 'application/json' };
/** 4 MiB: past the batch limit and many times the drain bound. */
const bigBody = Buffer.alloc(4 * 1024 * 1024, ' ');

type Send = { chunked?: boolean; endless?: boolean; pauseMs?: number; closeWithinMs?: number };

async function send(headers: Record<string, string>, body: Buffer, opts: Send = {}) {
  return rawUpload(suite.gateway.server, suite.gateway.url, {
    path: batchPath,
    headers,
    body,
    first: opts.chunked ? undefined : 16 * 1024,
    ...opts,
  });
}

/** The status of an ordinary upload (fetch, Content-Length). */
async function accepted(headers: Record<string, string>, body: Buffer) {
  const res = await fetch(new URL(batchPath, suite.gateway.url), { method: 'POST', headers, body });
  await res.arrayBuffer();
  return res.status;
}

const withKey = async (scopes: string) => {
  const client = await createClientWithKey(suite.pool, suite.demo.tenantId, scopes);
  return { ...client, headers: { ...json, ...bearer(client.apiKey) } };
};

type Result = Awaited<ReturnType<typeof send>>;

/** Answered with `status` and Connection: close, and the connection closed by the gateway. */
function expectAnsweredAndClosed(res: Result, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.connection).toBe('close');
  expect(res.closedByServer).toBe(true);
}

/**
 * Lingered, and was cut at the byte bound: read past the answer, never more than the bound. With
 * `unreadBefore`, the refusal came before the body was read at all, so the whole connection read
 * little more than the bound.
 */
function expectCutAtBound(res: Result, status: number, unreadBefore = true) {
  expectAnsweredAndClosed(res, status);
  expect(res.clientBytesWritten).toBeGreaterThan(4 * drainBytes);
  expect(res.serverBytesRead - res.serverBytesReadAtAnswer).toBeLessThanOrEqual(drainBytes + overshoot);
  expect(res.serverBytesRead).toBeGreaterThanOrEqual(drainBytes);
  expect(res.serverBytesRead).toBeLessThan(res.clientBytesWritten);
  if (unreadBefore) expect(res.serverBytesRead).toBeLessThan(drainBytes + overshoot + 128 * 1024);
}

describe('a body refused before it is read', () => {
  it.each([
    ['401 (no credentials)', 401, async () => ({ ...json })],
    ['403 (no scope for the operation)', 403, async () => (await withKey('import_jobs.read')).headers],
    [
      '415 (another media type)',
      415,
      async () => ({ ...(await withKey('all')).headers, 'Content-Type': 'text/plain' }),
    ],
    ['413 (by its Content-Length)', 413, async () => (await withKey('all')).headers],
  ])('is answered %s and read no further than the drain bound', async (_, status, headers) => {
    expectCutAtBound(await send(await headers(), bigBody), status);
  });

  it('is answered 429 past the upload quota, and not drained (the quota has no room within the time bound)', async () => {
    const { clientId, headers } = await withKey('all');
    await setUploadQuota(suite.pool, clientId, 1024);
    expect(await accepted(headers, batchBody(2400, 'q1'))).toBe(200);
    const res = await send(headers, batchBody(2400, 'q2'));
    expectAnsweredAndClosed(res, 429);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.serverBytesRead).toBeLessThan(res.requestBytes / 2);
    expect(res.serverBytesRead - res.serverBytesReadAtAnswer).toBeLessThanOrEqual(overshoot);
  });
});

describe('a chunked body (no Content-Length)', () => {
  it('is counted as it arrives and cut off with 429 once past the upload quota', async () => {
    const { clientId, headers } = await withKey('all');
    await setUploadQuota(suite.pool, clientId, 1024);
    // 900 KiB spent: the window has room, but not for the next 1000 KiB.
    const first = batchBody(2400, 'c1');
    expect(first.length).toBeGreaterThan(800 * 1024);
    expect(await accepted(headers, first)).toBe(200);
    const res = await send(headers, batchBody(2700, 'c2'), { chunked: true });
    expect(res.requestBytes).toBeLessThan(1024 * 1024);
    expectAnsweredAndClosed(res, 429);
    expect(res.serverBytesRead).toBeLessThan(res.requestBytes);
    const { rows } = await suite.pool.query('SELECT count(*)::int AS n FROM import_jobs WHERE client_id = $1', [
      clientId,
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('is cut off with 413 once past the size limit, then read no further than the drain bound', async () => {
    const { headers } = await withKey('all');
    const res = await send(headers, batchBody(11_000, 'c3'), { chunked: true });
    expect(res.requestBytes).toBeGreaterThan(3 * 1024 * 1024);
    expectCutAtBound(res, 413, false); // read up to the limit first
  });
});

describe('the lingering close after a refusal', () => {
  it('reads a body within the bound to its end: the client is not reset, the connection closes', async () => {
    const { headers } = await withKey('import_jobs.read');
    const body = Buffer.alloc(drainBytes / 2, ' ');
    const res = await send(headers, body);
    expectAnsweredAndClosed(res, 403);
    expect(res.serverBytesRead).toBe(res.requestBytes);
    expect(res.clientBytesWritten).toBe(res.requestBytes);
    expect(res.clientReset).toBe(false);
  });

  it.each([
    ['Content-Length', false],
    ['chunked', true],
  ])('cuts an endless body (%s) at REFUSED_BODY_DRAIN_BYTES', async (_, chunked) => {
    const { headers } = await withKey('import_jobs.read');
    const res = await send(headers, Buffer.alloc(64 * 1024, ' '), { endless: true, chunked });
    expectCutAtBound(res, 403);
    expect(res.clientReset).toBe(true);
  });

  it('closes a connection still trickling its body REFUSED_BODY_DRAIN_MS after the answer', async () => {
    const { headers } = await withKey('import_jobs.read');
    // 1 KiB per pause: at most a quarter of the byte bound arrives within the time bound, so
    // only the time bound can close it.
    const pauseMs = Math.ceil((drainMs * 1024 * 4) / drainBytes);
    const res = await send(headers, Buffer.alloc(1024, ' '), {
      endless: true,
      pauseMs,
      closeWithinMs: drainMs + scaled(15_000),
    });
    expectAnsweredAndClosed(res, 403);
    expect(res.serverBytesRead - res.serverBytesReadAtAnswer).toBeLessThan(drainBytes / 2);
  });

  it("charges what it reads to the sender's upload quota", async () => {
    const { clientId, headers } = await withKey('all');
    await setUploadQuota(suite.pool, clientId, 1024); // one window of 1 MiB
    expectCutAtBound(await send(headers, bigBody), 413);
    // 900 KiB fit an unspent window; after the drain's bytes they do not.
    const res = await fetch(new URL(batchPath, suite.gateway.url), {
      method: 'POST',
      headers,
      body: batchBody(2400, 'after-drain'),
    });
    const answer = (await res.json()) as { error: { code: string; details: { quota: string } } };
    expect(res.status).toBe(429);
    expect(answer.error.code).toBe('upload_quota_exceeded');
    expect(answer.error.details.quota).toBe('client');
  });
});

describe('the lingering close where the upload quota has no room (issue 53)', () => {
  /** A client of 512 KiB/s (a window of 1 MiB every 2 s) that has just spent 900 KiB of its window. */
  async function spentClient(tag: string) {
    const client = await withKey('all');
    await setUploadQuota(suite.pool, client.clientId, 512 * 1024);
    expect(await accepted(client.headers, batchBody(2400, tag))).toBe(200);
    return client;
  }
  const textPlain = (headers: Record<string, string>) => ({ ...headers, 'Content-Type': 'text/plain' });

  it('waits for the next window and reads a body within the bound to its end: the client is not reset', async () => {
    const { headers } = await spentClient('w1');
    // 200 KiB: more than the 124 KiB left of the window, less than the byte bound.
    const res = await send(textPlain(headers), Buffer.alloc(200 * 1024, ' '));
    expectAnsweredAndClosed(res, 415);
    expect(res.serverBytesRead).toBe(res.requestBytes);
    expect(res.clientBytesWritten).toBe(res.requestBytes);
    expect(res.clientReset).toBe(false);
  });

  it('reads no further than the byte bound while it waits', async () => {
    const { headers } = await spentClient('w2');
    expectCutAtBound(await send(headers, bigBody), 413);
  });

  it("charges what it reads after the wait to the client's quota", async () => {
    const { headers } = await spentClient('w3');
    expectCutAtBound(await send(textPlain(headers), bigBody), 415);
    // The next window holds the discard's bytes: 900 KiB more do not fit it.
    const res = await fetch(new URL(batchPath, suite.gateway.url), {
      method: 'POST',
      headers,
      body: batchBody(2400, 'w3-after'),
    });
    const answer = (await res.json()) as { error: { code: string; details: { quota: string } } };
    expect(res.status).toBe(429);
    expect(answer.error.code).toBe('upload_quota_exceeded');
  });

  it("leaves another tenant's uploads alone while a client's discard waits", async () => {
    const { headers } = await spentClient('w4');
    const other = ((await admin(suite.pool, demo, ['--name', 'other tenant'])) as Demo).clients.all!;
    const otherHeaders = { ...json, ...bearer(other.apiKey) };
    const discarded = send(textPlain(headers), bigBody);
    // While the discard waits for the next window (unless the machine was slower than the window).
    let done = false;
    void discarded.finally(() => (done = true));
    const deadline = Date.now() + scaled(15_000);
    while (lingeringWaitingForRoom() === 0 && !done && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const statuses = await Promise.all([1, 2, 3].map((n) => accepted(otherHeaders, batchBody(600, `other-${n}`))));
    expect(statuses).toEqual([200, 200, 200]);
    expectCutAtBound(await discarded, 415);
  });
});
