import { describe, expect, it } from 'vitest';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { bearer, createClientWithKey, createDemo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

const suite = useGatewaySuite({
  env: () => ({
    INBOUND_BATCH_MAX_TARGETS: '50',
    INBOUND_BATCH_MAX_BYTES: '60000',
    IMPORT_JOBS_MAX_TAKE: '20',
    // One client sends 10 concurrent duplicates below: let it hold every in-flight slot.
    IN_FLIGHT_CLIENT_SHARE_PERCENT: '100',
  }),
  workers: [inboundWorker, inboundExpressWorker],
});
const key = () => suite.demo.clients.all!.apiKey;
const post = (path: string, body: unknown, headers: Record<string, string> = {}, apiKey = key()) =>
  suite.api.post(path, { body, headers: { ...bearer(apiKey), ...headers } });
const job = (id: number, apiKey = key()) => suite.api.get(`/api/v1/import-jobs/${id}`, { headers: bearer(apiKey) });

async function untilFinal(id: number) {
  return eventually(
    async () => {
      const res = await job(id);
      return ['Completed', 'CompletedWithErrors', 'Failed'].includes(res.body.status) ? res.body : undefined;
    },
    30_000,
    `import job ${id} final`,
  );
}

describe('inbound targets to import jobs', () => {
  it('takes a single target to Completed, with the transitions visible to a poller', async () => {
    const [t] = makeTargets(1, 'single');
    const res = await post('/api/v1/inbound/targets', { sourceSystem: 'crm', ...t });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ kind: 'Single', status: 'Queued', idempotentReplay: false });
    expect(res.body.counts).toEqual({ received: 1, accepted: 1, rejected: 0, applied: 0, failed: 0 });
    const read = await job(res.body.importJobId); // read-your-writes
    expect(read.status).toBe(200);
    const final = await untilFinal(res.body.importJobId);
    expect(final).toMatchObject({ status: 'Completed', counts: { applied: 1, failed: 0 } });
    expect(final.startedAt).not.toBeNull();
    expect(final.completedAt).not.toBeNull();
    const { rows } = await suite.pool.query(
      `SELECT name, latitude, tags, metadata, service_duration_minutes FROM targets WHERE source_system = 'crm' AND external_id = $1`,
      [t!.externalId],
    );
    expect(rows[0]).toMatchObject({
      name: t!.name,
      latitude: t!.coordinates.latitude,
      tags: t!.tags,
      metadata: t!.metadata,
    });
  });

  it('stores every field as sent, null and absent ones alike, the last duplicate of a batch winning', async () => {
    const full = {
      externalId: 'fields-full',
      name: 'first version',
      address: {
        line1: 'Hauptstraße 12',
        line2: 'Hof',
        postalCode: '10115',
        city: 'Berlin',
        region: 'BE',
        countryCode: 'DE',
      },
      coordinates: { latitude: 52.5321, longitude: 13.3849 },
      timeWindows: [{ start: '2026-11-23T08:00:00.000Z', end: '2026-11-23T12:00:00.000Z' }],
      serviceDurationMinutes: 45,
      priority: 2,
      tags: ['boiler', 'ünïcode'],
      metadata: { contract: 'C-1', floor: 1, urgent: true, note: null },
    };
    const nulls = {
      externalId: 'fields-null',
      name: 'nulls',
      address: null,
      coordinates: { latitude: -33.9, longitude: 151.2 },
      timeWindows: null,
      serviceDurationMinutes: null,
      priority: null,
      tags: null,
      metadata: null,
    };
    const absent = { externalId: 'fields-absent', name: 'absent', coordinates: { latitude: 0, longitude: 0 } };
    const latest = { ...full, name: 'second version', tags: ['later'] };
    const res = await post('/api/v1/inbound/targets/batch', {
      sourceSystem: 'fields',
      targets: [full, nulls, absent, latest],
    });
    expect(res.status).toBe(200);
    expect(await untilFinal(res.body.importJobId)).toMatchObject({ status: 'Completed' });
    const { rows } = await suite.pool.query(
      `SELECT external_id, name, address, latitude, longitude, time_windows, service_duration_minutes, priority, tags,
              metadata, last_item_index FROM targets WHERE source_system = 'fields' ORDER BY external_id`,
    );
    const empty = { timeWindows: [], tags: [], metadata: {} };
    const row = (t: typeof full | typeof nulls | typeof absent, index: number, orEmpty = empty) => ({
      external_id: t.externalId,
      name: t.name,
      address: 'address' in t ? t.address : null,
      latitude: t.coordinates.latitude,
      longitude: t.coordinates.longitude,
      time_windows: ('timeWindows' in t && t.timeWindows) || orEmpty.timeWindows,
      service_duration_minutes: 'serviceDurationMinutes' in t ? t.serviceDurationMinutes : null,
      priority: 'priority' in t ? t.priority : null,
      tags: ('tags' in t && t.tags) || orEmpty.tags,
      metadata: ('metadata' in t && t.metadata) || orEmpty.metadata,
      last_item_index: index,
    });
    expect(rows).toEqual([row(absent, 2), row(latest, 3), row(nulls, 1)]);
  });

  it('applies a batch in several chunks with exact counts', async () => {
    const targets = makeTargets(50, 'batch');
    const res = await post('/api/v1/inbound/targets/batch', { sourceSystem: 'erp', externalBatchId: 'b-1', targets });
    expect(res.status).toBe(200);
    const final = await untilFinal(res.body.importJobId);
    expect(final).toMatchObject({ status: 'Completed', externalBatchId: 'b-1' });
    expect(final.counts).toEqual({ received: 50, accepted: 50, rejected: 0, applied: 50, failed: 0 });
    const { rows } = await suite.pool.query(
      `SELECT (SELECT count(*)::int FROM targets WHERE source_system = 'erp' AND external_id LIKE 'batch-%') AS targets,
              (SELECT count(*)::int FROM import_job_chunks WHERE import_job_id = $1) AS chunks,
              (SELECT chunk_count FROM import_jobs WHERE id = $1) AS chunk_count`,
      [res.body.importJobId],
    );
    expect(rows[0].targets).toBe(50);
    expect(rows[0].chunks).toBe(rows[0].chunk_count);
  });

  it('accepts a batch in part: invalid targets are listed, valid ones applied', async () => {
    const [a, b, c] = makeTargets(3, 'mixed');
    const bad = { ...b!, name: '', coordinates: { latitude: 95, longitude: 13 } };
    const res = await post('/api/v1/inbound/targets/batch', { sourceSystem: 'erp', targets: [a, bad, c, 'oops'] });
    expect(res.status).toBe(200);
    expect(res.body.counts).toMatchObject({ received: 4, accepted: 2, rejected: 2 });
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { index: 1, externalId: 'mixed-1', field: 'name', message: expect.any(String) },
        { index: 1, externalId: 'mixed-1', field: 'coordinates.latitude', message: expect.any(String) },
        { index: 3, externalId: null, field: null, message: expect.any(String) },
      ]),
    );
    const final = await untilFinal(res.body.importJobId);
    expect(final.status).toBe('CompletedWithErrors');
    expect(final.counts).toMatchObject({ applied: 2, failed: 0, rejected: 2 });
  });

  it('refuses a batch with no valid target, or a bad envelope, with 400 and queues nothing', async () => {
    const before = (await suite.pool.query('SELECT count(*)::int AS n FROM import_jobs')).rows[0].n;
    const none = await post('/api/v1/inbound/targets/batch', { sourceSystem: 'erp', targets: [{ externalId: 'x' }] });
    expect(none.status).toBe(400);
    expect(none.body.error.code).toBe('validation_failed');
    expect(Object.keys(none.body.error.fieldErrors)).toEqual(expect.arrayContaining(['targets[0].name']));
    const envelope = await post('/api/v1/inbound/targets/batch', { targets: makeTargets(1), extra: 1 });
    expect(envelope.status).toBe(400);
    expect(Object.keys(envelope.body.error.fieldErrors).sort()).toEqual(['extra', 'sourceSystem']);
    const empty = await post('/api/v1/inbound/targets/batch', { sourceSystem: 'erp', targets: [] });
    expect(empty.status).toBe(400);
    const single = await post('/api/v1/inbound/targets', { sourceSystem: 'crm', externalId: 'no-place', name: 'x' });
    expect(single.status).toBe(400);
    expect(single.body.error.fieldErrors).toHaveProperty('address');
    expect((await suite.pool.query('SELECT count(*)::int AS n FROM import_jobs')).rows[0].n).toBe(before);
  });

  it('replays the same key and body with the same job, and answers 409 to a changed body', async () => {
    const body = { sourceSystem: 'erp', targets: makeTargets(5, 'idem') };
    const headers = { 'idempotency-key': 'batch-42' };
    const first = await post('/api/v1/inbound/targets/batch', body, headers);
    const again = await post('/api/v1/inbound/targets/batch', body, headers);
    expect(again.status).toBe(200);
    expect(again.body.importJobId).toBe(first.body.importJobId);
    expect(again.body.idempotentReplay).toBe(true);
    const changed = await post('/api/v1/inbound/targets/batch', { ...body, targets: makeTargets(4, 'idem') }, headers);
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('idempotency_conflict');
    // externalBatchId is the key when no header is sent
    const byBatchId = { sourceSystem: 'erp', externalBatchId: 'ext-7', targets: makeTargets(2, 'ext') };
    const b1 = await post('/api/v1/inbound/targets/batch', byBatchId);
    const b2 = await post('/api/v1/inbound/targets/batch', byBatchId);
    expect(b2.body).toMatchObject({ importJobId: b1.body.importJobId, idempotentReplay: true });
    expect((await post('/api/v1/inbound/targets/batch', { ...byBatchId, targets: makeTargets(1, 'ext') })).status).toBe(
      409,
    );
    const final = await untilFinal(first.body.importJobId);
    expect(final.counts.applied).toBe(5); // produced once
    const { rows } = await suite.pool.query(
      'SELECT count(*)::int AS n FROM import_job_chunks WHERE import_job_id = $1',
      [first.body.importJobId],
    );
    expect(rows[0].n).toBe(1);
  });

  it('tells bodies apart byte for byte', async () => {
    const body = { sourceSystem: 'erp', targets: makeTargets(3, 'bytes') };
    const headers = { 'idempotency-key': 'bytes-1', 'content-type': 'application/json' };
    const sent = await suite.api.post('/api/v1/inbound/targets/batch', {
      rawBody: JSON.stringify(body),
      headers: { ...bearer(key()), ...headers },
    });
    expect(sent.status).toBe(200);
    const pretty = await suite.api.post('/api/v1/inbound/targets/batch', {
      rawBody: JSON.stringify(body, null, 2),
      headers: { ...bearer(key()), ...headers },
    });
    expect(pretty.status).toBe(409);
    expect(pretty.body.error.code).toBe('idempotency_conflict');
  });

  it('produces one job for concurrent identical requests with one key', async () => {
    const body = { sourceSystem: 'erp', targets: makeTargets(3, 'conc') };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => post('/api/v1/inbound/targets/batch', body, { 'idempotency-key': 'conc-1' })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => r.body.importJobId)).size).toBe(1);
    expect(results.filter((r) => !r.body.idempotentReplay)).toHaveLength(1);
  });

  it('answers 413 past the target count and past the byte limit', async () => {
    const many = await post('/api/v1/inbound/targets/batch', { sourceSystem: 'erp', targets: makeTargets(51) });
    expect(many.status).toBe(413);
    expect(many.body.error.code).toBe('payload_too_large');
    expect(many.body.error.details).toMatchObject({ maxTargets: 50, targets: 51 });
    const heavy = makeTargets(40).map((t) => ({ ...t, name: 'x'.repeat(200), metadata: { blob: 'y'.repeat(1000) } }));
    const big = await post('/api/v1/inbound/targets/batch', { sourceSystem: 'erp', targets: heavy });
    expect(big.status).toBe(413);
  });

  it('keeps one row per target holding the newer data', async () => {
    const [t] = makeTargets(1, 'twice');
    const first = await post('/api/v1/inbound/targets/batch', {
      sourceSystem: 'erp',
      targets: [
        { ...t, name: 'old' },
        { ...t, name: 'newer in same batch' },
      ],
    });
    await untilFinal(first.body.importJobId);
    const second = await post('/api/v1/inbound/targets', { sourceSystem: 'erp', ...t, name: 'newest' });
    await untilFinal(second.body.importJobId);
    const { rows } = await suite.pool.query(
      `SELECT name FROM targets WHERE source_system = 'erp' AND external_id = $1`,
      [t!.externalId],
    );
    expect(rows).toEqual([{ name: 'newest' }]);
  });
});

describe('import job reads', () => {
  it("lists the caller's jobs newest first, with filters and stable paging", async () => {
    const c = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await post(
        '/api/v1/inbound/targets',
        { sourceSystem: i % 2 ? 'odd' : 'even', ...makeTargets(1, `p${i}`)[0] },
        {},
        c.apiKey,
      );
      ids.push(res.body.importJobId);
    }
    const list = (q: string) => suite.api.get(`/api/v1/import-jobs${q}`, { headers: bearer(c.apiKey) });
    const all = await list('');
    expect(all.body).toMatchObject({ total: 5, skip: 0, take: 50 });
    expect(all.body.items.map((j: { importJobId: number }) => j.importJobId)).toEqual([...ids].reverse());
    const page2 = await list('?skip=2&take=2');
    expect(page2.body.items.map((j: { importJobId: number }) => j.importJobId)).toEqual([ids[2], ids[1]]);
    const odd = await list('?sourceSystem=odd');
    expect(odd.body.total).toBe(2);
    await eventually(async () => ((await list('?status=Completed')).body.total === 5 ? true : undefined));
    expect((await list('?status=Queued')).body.total).toBe(0);
    const pastTheEnd = await list('?skip=5&take=2');
    expect(pastTheEnd.body).toMatchObject({ items: [], total: 5, totalIsExact: true, skip: 5, nextCursor: null });

    // The cursor walk: each page's nextCursor gives the next, with the filters kept, to the end.
    const walked: number[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page = await list(`?take=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      walked.push(...page.body.items.map((j: { importJobId: number }) => j.importJobId));
      cursor = page.body.nextCursor;
    }
    expect(walked).toEqual([...ids].reverse());
    const oddFirst = await list('?sourceSystem=odd&take=1');
    const oddNext = await list(`?sourceSystem=odd&take=1&cursor=${oddFirst.body.nextCursor}`);
    expect(oddNext.body.items.map((j: { importJobId: number }) => j.importJobId)).toEqual([ids[1]]);
    expect(oddNext.body.nextCursor).toBeNull();
    // Jobs created after the first page never shift the pages a cursor leads to.
    const first = await list('?take=2');
    await post('/api/v1/inbound/targets', { sourceSystem: 'even', ...makeTargets(1, 'later')[0] }, {}, c.apiKey);
    const second = await list(`?take=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items.map((j: { importJobId: number }) => j.importJobId)).toEqual([ids[2], ids[1]]);
  });

  it('bounds offset paging and refuses cursors it did not hand out, with 400 field errors', async () => {
    const list = (q: string) => suite.api.get(`/api/v1/import-jobs${q}`, { headers: bearer(key()) });
    expect((await list('?skip=10000')).status).toBe(200);
    const tooDeep = await list('?skip=10001');
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error.fieldErrors.skip[0]).toMatch(/cursor/);
    const cursor = Buffer.from('import-jobs:12').toString('base64url');
    expect((await list(`?cursor=${cursor}`)).status).toBe(200);
    const both = await list(`?cursor=${cursor}&skip=3`);
    expect(both.status).toBe(400);
    expect(both.body.error.fieldErrors).toHaveProperty('skip');
    for (const bad of [
      'abc',
      Buffer.from('webhook-attempts:12').toString('base64url'),
      Buffer.from('import-jobs:-1').toString('base64url'),
    ]) {
      const res = await list(`?cursor=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error.fieldErrors).toHaveProperty('cursor');
    }
  });

  it('enforces the take maximum and valid filters with 400 field errors', async () => {
    const tooMany = await suite.api.get('/api/v1/import-jobs?take=21', { headers: bearer(key()) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.fieldErrors).toHaveProperty('take');
    const badStatus = await suite.api.get('/api/v1/import-jobs?status=Done&skip=-1', { headers: bearer(key()) });
    expect(Object.keys(badStatus.body.error.fieldErrors).sort()).toEqual(['skip', 'status']);
    const badId = await suite.api.get('/api/v1/import-jobs/abc', { headers: bearer(key()) });
    expect(badId.status).toBe(400);
    // Beyond int64 (19 digits, > 9223372036854775807): a 400, not PostgreSQL's out-of-range error as a 500.
    const hugeId = await suite.api.get('/api/v1/import-jobs/9999999999999999999', { headers: bearer(key()) });
    expect(hugeId.status).toBe(400);
    expect((await suite.api.get('/api/v1/import-jobs/9223372036854775807', { headers: bearer(key()) })).status).toBe(
      404,
    );
  });

  it("answers 404 for another client's or another tenant's job", async () => {
    const res = await post('/api/v1/inbound/targets', { sourceSystem: 'crm', ...makeTargets(1, 'iso')[0] });
    const sameTenant = await createClientWithKey(suite.pool, suite.demo.tenantId, 'import_jobs.read');
    const otherTenant = (await createDemo(suite.pool)).clients.all!;
    for (const apiKey of [sameTenant.apiKey, otherTenant.apiKey]) {
      const other = await job(res.body.importJobId, apiKey);
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('resource_not_found');
      const list = await suite.api.get('/api/v1/import-jobs', { headers: bearer(apiKey) });
      expect(list.body.items.map((j: { importJobId: number }) => j.importJobId)).not.toContain(res.body.importJobId);
    }
    expect((await job(999_999_999)).status).toBe(404);
  });
});
