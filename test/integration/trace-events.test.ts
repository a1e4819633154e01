import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOfRecord } from '../../src/admin/trace/sql.js';
import { traceRecord } from '../../src/admin/trace/trace.js';
import { createPool, inTransaction, type Pool } from '../../src/shared/db/pool.js';
import { sendTestEvent } from '../../src/shared/webhooks/endpoint-deliveries.js';
import type { WebhookEventData } from '../../src/shared/webhooks/event-types.js';
import { newWebhookEventId, recordWebhookEvent } from '../../src/shared/webhooks/outbox.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createDemo, insertImportJob } from '../support/fixtures.js';
import { scaled } from '../support/time-scale.js';

// Issue 51: `admin trace` finds a record's webhook events by webhook_events.subject_id (migrations
// 0032, 0033), which the outbox writes; events without one (recorded before 0032, or by the
// previous release during a rolling upgrade: its insert does not name the column) by their body,
// reading only such events. Before, it read and parsed the body of every event of the client since
// the record was made. Plans are measured in pages (EXPLAIN's buffers), which do not depend on how
// busy the machine is.

let db: TestDatabase;
let pool: Pool;
type Owner = { tenantId: string; clientId: string };
let owner: Owner;
let other: Owner;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, 'test', { connectionTimeoutMs: scaled(30_000) });
  const [a, b] = [await createDemo(pool), await createDemo(pool)];
  owner = { tenantId: a.tenantId, clientId: a.clients.all!.clientId };
  other = { tenantId: b.tenantId, clientId: b.clients.all!.clientId };
}, scaled(60_000));

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const importJobData = (importJobId: number): WebhookEventData['import_job.completed'] => ({
  importJobId,
  kind: 'Single',
  status: 'Completed',
  sourceSystem: 'fixture',
  externalBatchId: null,
  counts: { received: 1, accepted: 1, rejected: 0, applied: 1, failed: 0 },
  failureReason: null,
  createdAt: new Date().toISOString(),
  completedAt: new Date().toISOString(),
});

/** An event as this release's outbox records it (subject_id set). */
const recordNow = <T extends keyof WebhookEventData>(by: Owner, type: T, data: WebhookEventData[T]) =>
  inTransaction(pool, (tx) => recordWebhookEvent(tx, { ...by, type, data })).then((r) => r.eventId);

/** An event as the previous release (0.1.0) records it: its insert names no subject_id. */
async function recordAsPreviousRelease(by: Owner, type: string, data: object): Promise<string> {
  const now = new Date();
  const id = newWebhookEventId(now.getTime());
  const body = { id, type, version: 1, timestamp: now.toISOString(), ...by, data };
  await pool.query(
    `INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [id, by.tenantId, by.clientId, type, 1, JSON.stringify(body), now],
  );
  return id;
}

const subjectOfEvent = async (id: string) =>
  (await pool.query('SELECT subject_id FROM webhook_events WHERE id = $1', [id])).rows[0].subject_id as string | null;

describe('admin trace finds a record’s webhook events', () => {
  it('by subject_id, and those the previous release recorded without one by their body', async () => {
    const job = await insertImportJob(pool, owner);
    const neighbour = await insertImportJob(pool, owner);
    const named = await recordNow(owner, 'import_job.completed', importJobData(job));
    const unnamed = await recordAsPreviousRelease(owner, 'import_job.completed_with_errors', importJobData(job));
    // Not the job's: another job's events either way, and another client's naming the same id.
    await recordNow(owner, 'import_job.completed', importJobData(neighbour));
    await recordAsPreviousRelease(owner, 'import_job.failed', importJobData(neighbour));
    await recordNow(other, 'import_job.completed', importJobData(job));
    await recordAsPreviousRelease(other, 'import_job.completed', importJobData(job));

    expect(await subjectOfEvent(named)).toBe(String(job));
    expect(await subjectOfEvent(unnamed)).toBeNull();
    const t = await traceRecord(pool, 'import-job', String(job));
    expect(t!.webhooks.map((e) => [e.eventId, e.type])).toEqual([
      [named, 'import_job.completed'],
      [unnamed, 'import_job.completed_with_errors'],
    ]);
    const n = await traceRecord(pool, 'import-job', String(neighbour));
    expect(n!.webhooks.map((e) => e.type)).toEqual(['import_job.completed', 'import_job.failed']);
  });

  it('of a record with a UUID (a field job), either way', async () => {
    const fieldJobId = randomUUID();
    await pool.query(
      `INSERT INTO job_requests (field_job_id, tenant_id, client_id, external_id, idempotency_key, request_hash,
                                 job_number, request)
       VALUES ($1, $2, $3, $4, $4, '\\x00', $4, '{}')`,
      [fieldJobId, owner.tenantId, owner.clientId, `trace-${fieldJobId}`],
    );
    const data = {
      fieldJobId,
      jobNumber: 'J-000001',
      externalId: `trace-${fieldJobId}`,
      status: 'Created',
      workOrderId: null,
      jobType: 'REPAIR',
      title: 'Pump',
      createdAt: new Date().toISOString(),
    };
    const old = await recordAsPreviousRelease(owner, 'field_job.created', data);
    const named = await recordNow(owner, 'field_job.created', data);
    await recordNow(owner, 'field_job.created', { ...data, fieldJobId: randomUUID() });
    expect(await subjectOfEvent(named)).toBe(fieldJobId);
    const t = await traceRecord(pool, 'job', fieldJobId);
    expect(t!.webhooks.map((e) => e.eventId)).toEqual([old, named]);
  });

  it('a test event names its endpoint', async () => {
    const endpointId = randomUUID();
    await pool.query(
      `INSERT INTO webhook_endpoints (id, tenant_id, client_id, url, event_types, secret)
       VALUES ($1, $2, $3, 'https://example.com/hook', '{*}', 'whsec_test')`,
      [endpointId, owner.tenantId, owner.clientId],
    );
    const envelope = await sendTestEvent(pool, {
      id: endpointId,
      tenant_id: owner.tenantId,
      client_id: owner.clientId,
    });
    expect(await subjectOfEvent(envelope.id)).toBe(endpointId);
  });
});

/** The statement before migration 0032: every event of the client since the record was made, each body parsed. */
const eventsOfRecordBefore = `
  SELECT id, type, created_at FROM webhook_events
   WHERE client_id = $1 AND type = ANY($2::text[]) AND created_at >= $3 AND (body::jsonb -> 'data' ->> $4) = $5
   ORDER BY created_at, id`;

/** Pages (buffers hit or read) of a statement, from EXPLAIN (ANALYZE, BUFFERS), and its plan. */
async function pagesOf(text: string, values: unknown[]): Promise<{ pages: number; plan: string }> {
  const { rows } = await pool.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
  const plan = rows[0]['QUERY PLAN'][0].Plan;
  return { pages: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'], plan: JSON.stringify(plan) };
}

describe('the lookup on a client with many other events', () => {
  /** Events of the client's other import jobs, recorded after the traced one was made. */
  const others = 20_000;
  /** Of them, recorded by the previous release (no subject_id): those the fallback reads. */
  const othersUnnamed = 20;
  /**
   * Descents of the two indexes and the heap pages of the job's two events and of the unnamed
   * ones (one page each at most). The old statement read every event since the job was made:
   * about 1,300 table pages here.
   */
  const pagesAtMost = 15 + othersUnnamed + 2;

  it('reads the record’s events (and the unnamed ones since it was made), not the client’s others', async () => {
    const job = await insertImportJob(pool, owner);
    const { rows } = await pool.query('SELECT created_at FROM import_jobs WHERE id = $1', [job]);
    const since: Date = rows[0].created_at;
    // The other jobs' events as the outbox writes them (subject_id set), after the job was made;
    // every 1,000th as the previous release writes them (none), spread among them.
    await pool.query(
      `INSERT INTO webhook_events (id, tenant_id, client_id, type, version, body, created_at, subject_id)
       SELECT 'evt_0' || lpad(i::text, 25, '0'), $1, $2, 'import_job.completed', 1,
              json_build_object('id', 'evt_0' || lpad(i::text, 25, '0'), 'type', 'import_job.completed',
                                'data', json_build_object('importJobId', $4::bigint + i, 'sourceSystem', 'fill',
                                                          'pad', repeat('x', 300)))::text,
              $3::timestamptz + i * interval '1 second',
              CASE WHEN i % ($5::int / $6::int) = 0 THEN NULL ELSE ($4::bigint + i)::text END
         FROM generate_series(1, $5::int) i`,
      [owner.tenantId, owner.clientId, since, job + 1_000_000, others, othersUnnamed],
    );
    const named = await recordNow(owner, 'import_job.completed', importJobData(job));
    const unnamed = await recordAsPreviousRelease(owner, 'import_job.completed_with_errors', importJobData(job));
    await pool.query('VACUUM ANALYZE webhook_events');

    const t = await traceRecord(pool, 'import-job', String(job));
    expect(t!.webhooks.map((e) => e.eventId)).toEqual([named, unnamed]);

    // The statement as the trace runs it.
    let measured: { pages: number; plan: string } | undefined;
    const explaining = new Proxy(pool, {
      get(target, key) {
        if (key !== 'query') return Reflect.get(target, key);
        return async (text: string, values: unknown[]) => {
          if (text === eventsOfRecord) measured = await pagesOf(text, values);
          return target.query(text, values);
        };
      },
    });
    await traceRecord(explaining, 'import-job', String(job));
    expect(measured, 'the trace ran eventsOfRecord').toBeDefined();
    expect(measured!.pages).toBeGreaterThan(0);
    expect(measured!.pages).toBeLessThanOrEqual(pagesAtMost);
    expect(measured!.plan).toContain('webhook_events_subject_idx');
    expect(measured!.plan).toContain('webhook_events_unsubjected_idx');

    // The fill is one the old statement could not read in as few: it reads every event since.
    const values = [owner.clientId, ['import_job.completed', 'import_job.completed_with_errors'], since];
    const before = await pagesOf(eventsOfRecordBefore, [...values, 'importJobId', String(job)]);
    expect(before.pages).toBeGreaterThan(20 * pagesAtMost);
  });
});
