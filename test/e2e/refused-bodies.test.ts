import { describe, expect, it } from 'vitest';
import { bearer, createClientWithKey, setUploadQuota } from '../support/fixtures.js';
import { rawUpload } from '../support/raw-upload.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Refusing costs nothing (issue 24, findings 4 and 5): a request refused before its body is read
// is answered with Connection: close and the connection closed, never drained; a body without
// Content-Length is counted against the upload quota as it arrives and cut off once past it.
// Batches up to 1 MiB; a client with a quota of 1 KiB/s has one window of 1 MiB for 1024 s.
const suite = useGatewaySuite({
  env: () => ({
    UPLOAD_BYTES_PER_SECOND: String(48 * 1024),
    INBOUND_BATCH_MAX_BYTES: String(1024 * 1024),
    BODY_LIMIT_BYTES: String(16 * 1024),
  }),
});

const batchPath = '/api/v1/inbound/targets/batch';
const batchBody = (count: number, tag: string) =>
  Buffer.from(JSON.stringify({ sourceSystem: 'refused', targets: makeTargets(count, tag) }));
const json = { 'Content-Type': 'application/json' };

async function send(headers: Record<string, string>, body: Buffer, chunked = false) {
  return rawUpload(suite.gateway.server, suite.gateway.url, {
    path: batchPath,
    headers,
    body,
    chunked,
    first: chunked ? undefined : 16 * 1024,
  });
}

/** The status of an ordinary upload (fetch, Content-Length). */
async function accepted(headers: Record<string, string>, body: Buffer) {
  const res = await fetch(new URL(batchPath, suite.gateway.url), { method: 'POST', headers, body });
  await res.arrayBuffer();
  return res.status;
}

/** Answered with `status`, the connection closed, and most of the body never read. */
function expectRefusedUnread(res: Awaited<ReturnType<typeof send>>, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.connection).toBe('close');
  expect(res.closedByServer).toBe(true);
  expect(res.serverBytesRead).toBeLessThan(res.requestBytes / 2);
}

describe('a body refused before it is read', () => {
  const body = batchBody(240, 'r'); // about 90 KiB: within the batch limit
  it.each([
    ['401 (no credentials)', 401, async () => ({ ...json })],
    [
      '403 (no scope for the operation)',
      403,
      async () => ({ ...json, ...bearer((await createClientWithKey(suite.pool, suite.demo.tenantId, 'import_jobs.read')).apiKey) }),
    ],
    [
      '415 (another media type)',
      415,
      async () => ({
        'Content-Type': 'text/plain',
        ...bearer((await createClientWithKey(suite.pool, suite.demo.tenantId, 'all')).apiKey),
      }),
    ],
  ])('is answered %s with Connection: close, and not drained', async (_, status, headers) => {
    expect(body.length).toBeGreaterThan(64 * 1024);

    expectRefusedUnread(await send(await headers(), body), status);
  });

  it('is answered 413 by its Content-Length, and not drained', async () => {
    const client = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    const big = batchBody(3000, 'big');
    expect(big.length).toBeGreaterThan(1024 * 1024);
    expectRefusedUnread(await send({ ...json, ...bearer(client.apiKey) }, big), 413);
  });

  it('is answered 429 past the upload quota, and not drained', async () => {
    const client = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    await setUploadQuota(suite.pool, client.clientId, 1024);
    const headers = { ...json, ...bearer(client.apiKey) };
    expect(await accepted(headers, batchBody(2400, 'q1'))).toBe(200);
    const res = await send(headers, batchBody(2400, 'q2'));
    expectRefusedUnread(res, 429);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
  });
});

describe('a chunked body (no Content-Length)', () => {
  it('is counted as it arrives and cut off with 429 once past the upload quota', async () => {
    const client = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    await setUploadQuota(suite.pool, client.clientId, 1024);
    const headers = { ...json, ...bearer(client.apiKey) };
    // 900 KiB spent: the window has room, but not for the next 1000 KiB.
    const first = batchBody(2400, 'c1');
    expect(first.length).toBeGreaterThan(800 * 1024);
    expect(await accepted(headers, first)).toBe(200);
    const res = await send(headers, batchBody(2700, 'c2'), true);
    expect(res.requestBytes).toBeLessThan(1024 * 1024);
    expectRefusedUnread(res, 429);
    const { rows } = await suite.pool.query('SELECT count(*)::int AS n FROM import_jobs WHERE client_id = $1', [
      client.clientId,
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('is cut off with 413 once past the size limit', async () => {
    const client = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    const res = await send({ ...json, ...bearer(client.apiKey) }, batchBody(11_000, 'c3'), true);
    expect(res.requestBytes).toBeGreaterThan(3 * 1024 * 1024);
    expectRefusedUnread(res, 413);
  });
});
