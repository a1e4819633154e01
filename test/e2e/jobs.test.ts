import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { jobsWorker } from '../../src/workers/jobs/kind.js';
import { noWorkerMetrics } from '../../src/workers/worker-metrics.js';
import { bearer, createDemo, setRateLimit, createClientWithKey } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';

const suite = useGatewaySuite({ workers: [jobsWorker], env: () => ({ AUTH_CACHE_TTL_MS: '0' }) });
const paths = ['/api/connect/jobs', '/api/v1/connect/jobs'];
let n = 0;

const jobBody = (overrides: Record<string, unknown> = {}) => ({
  externalId: `JOB-${++n}-${Date.now()}`,
  title: 'Replace boiler pump',
  description: 'Pump is noisy',
  jobType: 'REPAIR',
  priority: 'High',
  customer: {
    name: 'ACME Facilities',
    externalId: 'C-17',
    contact: { name: 'Ann', phone: '+49 30 1234567', email: 'ann@example.com' },
  },
  site: {
    address: { line1: 'Hauptstraße 5', postalCode: '10115', city: 'Berlin', countryCode: 'DE' },
    coordinates: { latitude: 52.52, longitude: 13.4 },
  },
  requestedTimeWindow: { start: '2030-01-10T08:00:00+01:00', end: '2030-01-10T12:00:00+01:00' },
  expectedDurationMinutes: 90,
  metadata: { ticket: 'T-9' },
  ...overrides,
});
const create = (
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  key = suite.demo.clients['connect.jobs.write']!.apiKey,
) => suite.api.post(path, { body, headers: { ...bearer(key), ...headers } });

describe.each(paths)('POST %s', (path) => {
  it('creates with 201, then replays with 200 and the same ids', async () => {
    const body = jobBody();
    const first = await create(path, body, { 'x-correlation-id': 'crm-1' });
    expect(first.status).toBe(201);
    expect(Object.keys(first.body).sort()).toEqual([
      'correlationId',
      'created',
      'externalId',
      'fieldJobId',
      'idempotentReplay',
      'jobNumber',
      'requestId',
      'status',
    ]);
    expect(first.body).toMatchObject({
      externalId: body.externalId,
      status: 'Created',
      created: true,
      idempotentReplay: false,
      correlationId: 'crm-1',
    });
    expect(first.body.requestId).toBe(first.headers.get('x-request-id'));
    expect(first.body.jobNumber).toMatch(/^J-\d{6,}$/);
    const again = await create(path, body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      fieldJobId: first.body.fieldJobId,
      jobNumber: first.body.jobNumber,
      created: false,
      idempotentReplay: true,
    });
    expect(again.body.requestId).not.toBe(first.body.requestId);
  });

  it('answers 409 in the Connect shape to a changed body under the same key', async () => {
    const body = jobBody();
    await create(path, body);
    const res = await create(path, { ...body, title: 'Something else' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'idempotency_conflict', requestId: res.headers.get('x-request-id') });
    expect(res.body.error.details).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
    // An Idempotency-Key header is the key when given; a second key for a used externalId conflicts.
    const other = await create(path, body, { 'idempotency-key': 'another-key' });
    expect(other.status).toBe(409);
    expect(other.body.error.details[0].field).toBe('externalId');
  });

  it('uses the Idempotency-Key header as the key when given', async () => {
    const headers = { 'idempotency-key': `k-${path}-${n}` };
    const body = jobBody();
    const first = await create(path, body, headers);
    const again = await create(path, body, headers);
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.fieldJobId).toBe(first.body.fieldJobId);
  });

  it('answers 400 in the Connect shape with per-field details', async () => {
    const res = await create(path, {
      ...jobBody({ priority: 'Soon', expectedDurationMinutes: 'long', extra: 1 }),
      title: undefined,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'expectedDurationMinutes',
      'extra',
      'priority',
      'title',
    ]);
    const malformed = await suite.api.post(path, {
      headers: { ...bearer(suite.demo.clients.all!.apiKey), 'content-type': 'application/json' },
      rawBody: '{"externalId":',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatchObject({ code: 'invalid_json', details: null });
  });

  it.each([
    [
      'an end before the start',
      { requestedTimeWindow: { start: '2030-01-10T12:00:00Z', end: '2030-01-10T08:00:00Z' } },
      'requestedTimeWindow.end',
    ],
    [
      'a window in the past',
      { requestedTimeWindow: { start: '2020-01-10T08:00:00Z', end: '2020-01-10T12:00:00Z' } },
      'requestedTimeWindow.end',
    ],
    ['an unknown job type', { jobType: 'TELEPORT' }, 'jobType'],
    ['an unknown import target', { importTargetRef: { sourceSystem: 'erp', externalId: 'nope' } }, 'importTargetRef'],
  ])('answers 422 to %s', async (_, overrides, field) => {
    const res = await create(path, jobBody(overrides));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('unprocessable');
    expect(res.body.error.details).toEqual([{ field, message: expect.any(String) }]);
  });

  it('answers 401, 403 and 429 in the standard shape', async () => {
    const none = await suite.api.post(path, { body: jobBody() });
    expect(none.status).toBe(401);
    expect(Object.keys(none.body.error).sort()).toEqual(['code', 'correlationId', 'details', 'fieldErrors', 'message']);
    const forbidden = await create(path, jobBody(), {}, suite.demo.clients['connect.inventory.read']!.apiKey);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toHaveProperty('fieldErrors');
    const limited = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.jobs.write');
    await setRateLimit(suite.pool, limited.clientId, 1);
    expect((await create(path, jobBody(), {}, limited.apiKey)).status).toBe(201);
    const res = await create(path, jobBody(), {}, limited.apiKey);
    expect(res.status).toBe(429);
    expect(res.body.error).toHaveProperty('fieldErrors');
  });
});

describe('job materialisation', () => {
  it('makes the field job and its work order, keyed by the external id', async () => {
    const body = jobBody();
    const res = await create('/api/v1/connect/jobs', body);
    const row = await eventually(async () => {
      const { rows } = await suite.pool.query(
        `SELECT j.job_number, j.title, j.priority, w.id AS work_order_id
           FROM field_jobs j JOIN work_orders w ON w.field_job_id = j.id WHERE j.id = $1`,
        [res.body.fieldJobId],
      );
      return rows[0];
    });
    expect(row).toMatchObject({ job_number: res.body.jobNumber, title: body.title, priority: 'High' });
    const { rows } = await suite.pool.query('SELECT external_work_order_id FROM work_orders WHERE id = $1', [
      row.work_order_id,
    ]);
    expect(rows[0].external_work_order_id).toBe(body.externalId);
  });

  it('gives 50 concurrent identical requests one 201, one job and one work order', async () => {
    const body = jobBody();
    const results = await Promise.all(Array.from({ length: 50 }, () => create('/api/v1/connect/jobs', body)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(49);
    expect(new Set(results.map((r) => r.body.fieldJobId)).size).toBe(1);
    await eventually(async () => {
      const { rows } = await suite.pool.query(
        `SELECT (SELECT count(*)::int FROM field_jobs WHERE external_id = $1) AS jobs,
                (SELECT count(*)::int FROM job_requests WHERE external_id = $1) AS requests,
                (SELECT count(*)::int FROM work_orders WHERE external_work_order_id = $1) AS work_orders`,
        [body.externalId],
      );
      return rows[0].jobs === 1 ? rows[0] : undefined;
    }).then((counts) => expect(counts).toEqual({ jobs: 1, requests: 1, work_orders: 1 }));
  });

  it('numbers jobs per tenant, increasing', async () => {
    const a = await create('/api/v1/connect/jobs', jobBody());
    const b = await create('/api/v1/connect/jobs', jobBody());
    expect(Number(b.body.jobNumber.slice(2))).toBeGreaterThan(Number(a.body.jobNumber.slice(2)));
  });

  it('gives the same external id in two tenants two jobs', async () => {
    const other = await createDemo(suite.pool);
    const body = jobBody();
    const mine = await create('/api/v1/connect/jobs', body);
    const theirs = await create('/api/v1/connect/jobs', body, {}, other.clients['connect.jobs.write']!.apiKey);
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.fieldJobId).not.toBe(mine.body.fieldJobId);
    expect(theirs.body.jobNumber).toBe('J-000001');
  });
});

describe('a job whose materialisation fails for good', () => {
  it('is marked Failed when its message is dead-lettered, and replays say so', async () => {
    const failed = jobBody();
    const answer = await create('/api/v1/connect/jobs', failed);
    // Let the worker finish with its own message first, then stage the state of a request whose
    // materialisation never succeeded, and hand the message to the worker's dead-letter handler
    // as the consumer loop does after its retries.
    await eventually(async () => {
      const { rows } = await suite.pool.query('SELECT materialized_at FROM job_requests WHERE field_job_id = $1', [
        answer.body.fieldJobId,
      ]);
      return rows[0]?.materialized_at ? true : undefined;
    });
    await suite.pool.query('UPDATE job_requests SET materialized_at = NULL WHERE field_job_id = $1', [
      answer.body.fieldJobId,
    ]);
    const message = {
      topic: 'jobs',
      partition: 0,
      offset: '0',
      key: answer.body.fieldJobId,
      value: Buffer.from(
        JSON.stringify({
          type: 'jobs.create',
          version: 1,
          tenantId: suite.demo.tenantId,
          clientId: suite.demo.clients['connect.jobs.write']!.clientId,
          producedAt: new Date().toISOString(),
          requestId: null,
          correlationId: null,
          payload: { fieldJobId: answer.body.fieldJobId, jobNumber: answer.body.jobNumber, request: failed },
        }),
      ),
      headers: {},
    };
    await jobsWorker.onDeadLetter!(message, new Error('could not be applied'), {
      config: suite.config,
      logger: createLogger('silent', 'test'),
      pool: suite.pool,
      bus: undefined as never,
      metrics: noWorkerMetrics,
    });
    const replay = await create('/api/v1/connect/jobs', failed);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ fieldJobId: answer.body.fieldJobId, status: 'Failed', idempotentReplay: true });
    const { rows } = await suite.pool.query('SELECT failure_reason FROM job_requests WHERE field_job_id = $1', [
      answer.body.fieldJobId,
    ]);
    expect(rows[0].failure_reason).toBe('could not be applied');
  });
});
