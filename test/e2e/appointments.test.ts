import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { appointmentSetStatus } from '../../src/admin/commands/appointment.js';
import { newAppointmentId } from '../../src/shared/appointments/ids.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { envelope } from '../../src/shared/messages.js';
import { appointmentsWorker } from '../../src/workers/appointments/kind.js';
import { admin, createClientWithKey, createDemo } from '../support/fixtures.js';
import { eventually, testBus } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { startTestWorkers } from '../support/workers.js';
import { accessToken, bearerToken } from './oauth-helpers.js';

// One partition: the worker handles messages in the order they were produced, so "a later
// request is validated" means "every earlier message was handled".
const suite = useGatewaySuite({ env: () => ({ KAFKA_TOPIC_PARTITIONS: '1' }) });
const base = '/connect/v1/appointment-requests';
let token: string;

beforeAll(async () => {
  token = await accessToken(suite.api, suite.demo.clients.all!);
});

const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString().replace('Z', '+00:00');

function appointment(ref: string, over: Record<string, unknown> = {}) {
  return {
    externalReference: ref,
    serviceType: 'repair',
    priority: 'high',
    customer: { name: 'Harbour Hospital', externalId: 'CUST-7', organization: 'Harbour Health GmbH' },
    contact: { name: 'Kim Meyer', phone: '+4940123456', email: 'kim.meyer@example.com' },
    location: {
      address: { line1: 'Am Hafen 1', postalCode: '20457', city: 'Hamburg', countryCode: 'DE' },
      coordinates: { latitude: 53.54, longitude: 9.98 },
    },
    preferredTimeWindows: [{ start: inHours(24), end: inHours(28) }],
    description: 'Boiler pressure drops overnight.',
    metadata: { ticket: 'T-4711', floor: 2 },
    ...over,
  };
}

const submit = (body: unknown, t = token) => suite.api.post(base, { headers: bearerToken(t), body });
const get = (id: string, t = token) => suite.api.get(`${base}/${id}`, { headers: bearerToken(t) });
const statusOf = (id: string, t = token) => suite.api.get(`${base}/${id}/status`, { headers: bearerToken(t) });
const cancel = (id: string, body: unknown, key: string | null = randomUUID(), t = token) =>
  suite.api.post(`${base}/${id}/cancel`, {
    headers: { ...bearerToken(t), ...(key === null ? {} : { 'idempotency-key': key }) },
    body,
  });
const cancelBody = { reason: 'Resolved by phone', cancelledBy: 'portal:kim' };
const setStatus = (id: string, status: string, reason?: string) =>
  admin(suite.pool, appointmentSetStatus, ['--id', id, '--status', status, ...(reason ? ['--reason', reason] : [])]);

async function submitted(ref: string, over: Record<string, unknown> = {}): Promise<string> {
  const res = await submit(appointment(ref, over));
  expect(res.status, res.text).toBe(202);
  return res.body.id;
}

async function untilStatus(id: string, status: string) {
  return eventually(
    async () => {
      const res = await statusOf(id);
      return res.body.status === status ? res.body : undefined;
    },
    30_000,
    `${id} ${status}`,
  );
}

let waitingId = '';
let cancelledBeforeValidation = '';

describe('submission, before any worker runs', () => {
  it('records the request as Submitted: 202 with the record and its Location, readable at once', async () => {
    const body = appointment('REF-SUBMIT');
    const res = await submit(body);
    expect(res.status).toBe(202);
    expect(res.body.id).toMatch(/^apr_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.headers.get('location')).toBe(`${base}/${res.body.id}`);
    expect(res.body).toEqual({
      ...body,
      id: res.body.id,
      location: { ...body.location, address: { ...body.location.address, line2: null, region: null } },
      status: 'Submitted',
      statusReason: null,
      cancellation: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    waitingId = res.body.id;

    const read = await get(waitingId);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
    const status = await statusOf(waitingId);
    expect(status.body).toEqual({
      id: waitingId,
      status: 'Submitted',
      history: [{ status: 'Submitted', enteredAt: res.body.createdAt, reason: null, actor: 'client' }],
    });
  });

  it('fills the defaults of a minimal request', async () => {
    const res = await submit({
      externalReference: 'REF-MINIMAL',
      serviceType: 'visit',
      customer: { name: 'Corner shop' },
      contact: { name: 'Sam', email: 'sam@example.com' },
      location: { address: { line1: 'Hauptstraße 5', city: 'Berlin', countryCode: 'DE' } },
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      priority: 'normal',
      preferredTimeWindows: [],
      description: null,
      metadata: {},
      customer: { name: 'Corner shop', externalId: null, organization: null },
      contact: { phone: null },
      location: { coordinates: null },
    });
  });

  it('cancels a request that is still Submitted', async () => {
    cancelledBeforeValidation = await submitted('REF-CANCEL-EARLY');
    const res = await cancel(cancelledBeforeValidation, cancelBody);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: cancelledBeforeValidation, status: 'Cancelled', cancelledAt: expect.any(String) });
    expect(res.body.cancelledAt).toMatch(/Z$/);
    const read = await get(cancelledBeforeValidation);
    expect(read.body).toMatchObject({
      status: 'Cancelled',
      statusReason: cancelBody.reason,
      cancellation: { ...cancelBody, cancelledAt: res.body.cancelledAt },
    });
  });

  it('refuses an invalid submission with 400 and per-field errors, recording nothing', async () => {
    const before = (await suite.pool.query('SELECT count(*)::int AS n FROM appointment_requests')).rows[0].n;
    const res = await submit({
      ...appointment('REF-BAD'),
      serviceType: 'teleport',
      priority: 'asap',
      contact: { name: 'No way to reach' },
      location: { address: { line1: 'x', city: 'y', countryCode: 'Germany' } },
      preferredTimeWindows: [{ start: inHours(30), end: inHours(29) }],
      description: 'd'.repeat(4001),
      metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
      surprise: true,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(Object.keys(res.body.error.fieldErrors).sort()).toEqual(
      [
        'contact.phone',
        'description',
        'location.address.countryCode',
        'metadata',
        'preferredTimeWindows[0].end',
        'priority',
        'serviceType',
        'surprise',
      ].sort(),
    );
    const missing = await submit({ externalReference: 'REF-EMPTY' });
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body.error.fieldErrors)).toEqual(
      expect.arrayContaining(['serviceType', 'customer', 'contact', 'location']),
    );
    const windows = await submit(
      appointment('REF-WINDOWS', { preferredTimeWindows: Array(6).fill({ start: inHours(24), end: inHours(25) }) }),
    );
    expect(windows.status).toBe(400);
    expect((await suite.pool.query('SELECT count(*)::int AS n FROM appointment_requests')).rows[0].n).toBe(before);
  });

  it('answers a repeated externalReference with the existing request, a changed one with 409, never two', async () => {
    const body = appointment('REF-DUP');
    const first = await submit(body);
    expect(first.status).toBe(202);
    // Same content in another key order: the same request, 200, marked as a replay.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const again = await submit(reordered);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(`${base}/${first.body.id}`);
    expect(again.body).toEqual(first.body);
    const changed = await submit({ ...body, priority: 'urgent' });
    expect(changed.status).toBe(409);
    expect(changed.body.error).toMatchObject({ code: 'idempotency_conflict', details: { id: first.body.id } });

    // Concurrent identical submissions: one request, one 202.
    const concurrent = appointment('REF-CONCURRENT');
    const results = await Promise.all(Array.from({ length: 8 }, () => submit(concurrent)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 202]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    const { rows } = await suite.pool.query(
      `SELECT count(*)::int AS n FROM appointment_requests WHERE external_reference IN ('REF-DUP', 'REF-CONCURRENT')`,
    );
    expect(rows[0].n).toBe(2);

    // Another client may use the same externalReference for its own request.
    const other = await createClientWithKey(suite.pool, suite.demo.tenantId, 'appointments.write');
    const theirs = await submit(body, await accessToken(suite.api, other));
    expect(theirs.status).toBe(202);
    expect(theirs.body.id).not.toBe(first.body.id);
  });
});

describe('with the appointments worker', () => {
  beforeAll(async () => {
    suite.workers = await startTestWorkers(suite.config, [appointmentsWorker]);
  });

  it('validates a waiting request to PendingReview, recording Validated on the way', async () => {
    const view = await untilStatus(waitingId, 'PendingReview');
    expect(view.history.map((h: { status: string; actor: string }) => [h.status, h.actor])).toEqual([
      ['Submitted', 'client'],
      ['Validated', 'system'],
      ['PendingReview', 'system'],
    ]);
    const times = view.history.map((h: { enteredAt: string }) => Date.parse(h.enteredAt));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(view.history.every((h: { reason: string | null }) => h.reason === null)).toBe(true);
  });

  it('leaves a request cancelled before validation Cancelled', async () => {
    const later = await submitted('REF-AFTER-CANCEL');
    await untilStatus(later, 'PendingReview'); // one partition: the earlier message was handled before
    const view = (await statusOf(cancelledBeforeValidation)).body;
    expect(view.status).toBe('Cancelled');
    expect(view.history.map((h: { status: string }) => h.status)).toEqual(['Submitted', 'Cancelled']);
    expect(view.history[1]).toMatchObject({ reason: cancelBody.reason, actor: 'client' });
  });

  it('rejects a request that breaks a business rule, with the reason', async () => {
    const past = await submitted('REF-PAST', { preferredTimeWindows: [{ start: inHours(-5), end: inHours(-3) }] });
    const urgent = await submitted('REF-URGENT', {
      priority: 'urgent',
      contact: { name: 'Kim', email: 'kim@example.com' },
    });
    const pastView = await untilStatus(past, 'Rejected');
    expect(pastView.history.map((h: { status: string }) => h.status)).toEqual(['Submitted', 'Rejected']);
    expect(pastView.history[1]).toMatchObject({ actor: 'system', reason: expect.stringContaining('ended') });
    const urgentView = await untilStatus(urgent, 'Rejected');
    expect(urgentView.history[1].reason).toMatch(/urgent.*contact\.phone/);
    expect((await get(past)).body).toMatchObject({
      status: 'Rejected',
      statusReason: expect.stringContaining('ended'),
    });
  });

  it('lets the back office move a request along, and refuses moves the table does not allow', async () => {
    const id = await submitted('REF-BACKOFFICE');
    await untilStatus(id, 'PendingReview');
    await expect(setStatus(id, 'Scheduled')).rejects.toThrow(
      /PendingReview: the back office cannot move it to Scheduled/,
    );
    await expect(setStatus(id, 'Rejected')).rejects.toThrow(/--reason is required/);
    await expect(setStatus(id, 'Validated')).rejects.toThrow(/--status must be one of/);
    await expect(setStatus('apr_01JD2Z8K3M4N5P6Q7R8S9T0V1W', 'Accepted')).rejects.toThrow(/not found/);
    for (const status of ['Accepted', 'Scheduled', 'Assigned', 'InProgress', 'Completed']) {
      expect(await setStatus(id, status, status === 'Scheduled' ? 'Tuesday 8–12' : undefined)).toMatchObject({
        id,
        status,
      });
    }
    const view = (await statusOf(id)).body;
    expect(view.history.map((h: { status: string; actor: string }) => `${h.status}/${h.actor}`)).toEqual([
      'Submitted/client',
      'Validated/system',
      'PendingReview/system',
      'Accepted/back-office',
      'Scheduled/back-office',
      'Assigned/back-office',
      'InProgress/back-office',
      'Completed/back-office',
    ]);
    expect(view.history[4].reason).toBe('Tuesday 8–12');
  });
});

describe('cancel', () => {
  async function inStatus(ref: string, path: string[]): Promise<string> {
    const id = await submitted(ref);
    await untilStatus(id, 'PendingReview');
    for (const status of path) await setStatus(id, status, status === 'Rejected' ? 'Out of service area' : undefined);
    return id;
  }

  it('is allowed from PendingReview, Accepted, Scheduled and Assigned', async () => {
    const paths: Record<string, string[]> = {
      PendingReview: [],
      Accepted: ['Accepted'],
      Scheduled: ['Accepted', 'Scheduled'],
      Assigned: ['Accepted', 'Scheduled', 'Assigned'],
    };
    for (const [from, path] of Object.entries(paths)) {
      const id = await inStatus(`REF-CANCEL-${from}`, path);
      const res = await cancel(id, cancelBody);
      expect(res.status, from).toBe(200);
      expect(res.body.status).toBe('Cancelled');
      const history = (await statusOf(id)).body.history;
      expect(history.at(-1)).toEqual({
        status: 'Cancelled',
        enteredAt: res.body.cancelledAt,
        reason: cancelBody.reason,
        actor: 'client',
      });
    }
  });

  it('is refused with 409 invalid_state_transition from InProgress, Completed, Rejected and Failed', async () => {
    const refused: Record<string, string> = {
      InProgress: await inStatus('REF-NOCANCEL-IP', ['Accepted', 'Scheduled', 'Assigned', 'InProgress']),
      Completed: await inStatus('REF-NOCANCEL-DONE', ['Accepted', 'Scheduled', 'Assigned', 'InProgress', 'Completed']),
      Rejected: await inStatus('REF-NOCANCEL-REJ', ['Rejected']),
    };
    // Failed: a message that keeps failing is dead-lettered and its request marked Failed.
    refused.Failed = await deadLetteredRequest();
    for (const [status, id] of Object.entries(refused)) {
      const res = await cancel(id, cancelBody);
      expect(res.status, status).toBe(409);
      expect(res.body.error).toMatchObject({
        code: 'invalid_state_transition',
        details: { id, status, cancellableFrom: expect.arrayContaining(['Submitted', 'Assigned']) },
      });
      expect((await statusOf(id)).body.status).toBe(status);
    }
  });

  it('replays the first answer for the same key and body, and refuses a changed body or another key', async () => {
    const id = await inStatus('REF-IDEM', []);
    const key = randomUUID();
    const first = await cancel(id, cancelBody, key);
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    await new Promise((r) => setTimeout(r, 20));
    const replay = await cancel(
      id,
      { cancelledBy: cancelBody.cancelledBy, reason: cancelBody.reason },
      key.toUpperCase(),
    );
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body); // same cancelledAt
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const changed = await cancel(id, { ...cancelBody, reason: 'Another reason' }, key);
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('idempotency_conflict');
    const otherKey = await cancel(id, cancelBody);
    expect(otherKey.status).toBe(409);
    expect(otherKey.body.error).toMatchObject({
      code: 'already_cancelled',
      details: { id, cancelledAt: first.body.cancelledAt },
    });
    // The key belongs to that cancel: using it for another request is a conflict too.
    const second = await inStatus('REF-IDEM-2', []);
    const reused = await cancel(second, cancelBody, key);
    expect(reused.status).toBe(409);
    expect(reused.body.error).toMatchObject({ code: 'idempotency_conflict', details: { id } });
    const history = (await statusOf(id)).body.history.map((h: { status: string }) => h.status);
    expect(history.filter((s: string) => s === 'Cancelled')).toHaveLength(1);
  });

  it('answers concurrent cancels with one key with one cancelledAt', async () => {
    const id = await inStatus('REF-CONCURRENT-CANCEL', []);
    const key = randomUUID();
    const results = await Promise.all(Array.from({ length: 6 }, () => cancel(id, cancelBody, key)));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(new Set(results.map((r) => r.body.cancelledAt)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
  });

  it('needs an Idempotency-Key that is a UUID, and a valid body (400)', async () => {
    const id = await submitted('REF-CANCEL-400');
    const missing = await cancel(id, cancelBody, null);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({
      code: 'validation_failed',
      fieldErrors: { 'Idempotency-Key': [expect.any(String)] },
    });
    const malformed = await cancel(id, cancelBody, 'not-a-uuid');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.fieldErrors).toHaveProperty('Idempotency-Key');
    const body = await cancel(id, { reason: '', by: 'x' });
    expect(body.status).toBe(400);
    expect(Object.keys(body.body.error.fieldErrors).sort()).toEqual(['by', 'cancelledBy', 'reason']);
    expect((await get(id)).body.status).not.toBe('Cancelled');
  });
});

describe('isolation', () => {
  it("answers 404 to another client's or another tenant's request, and to unknown ids", async () => {
    const id = await submitted('REF-MINE');
    const sameTenant = await accessToken(suite.api, suite.demo.clients['appointments.read']!);
    const otherTenant = await createDemo(suite.pool);
    const foreign = await accessToken(suite.api, otherTenant.clients.all!);
    for (const t of [sameTenant, foreign]) {
      expect((await get(id, t)).status).toBe(404);
      expect((await statusOf(id, t)).status).toBe(404);
    }
    const theirCancel = await cancel(id, cancelBody, randomUUID(), foreign);
    expect(theirCancel.status).toBe(404);
    expect(theirCancel.body.error.code).toBe('resource_not_found');
    for (const unknown of [newAppointmentId(), 'apr_nope', '12345']) {
      expect((await get(unknown)).status, unknown).toBe(404);
      expect((await statusOf(unknown)).status, unknown).toBe(404);
      expect((await cancel(unknown, cancelBody)).status, unknown).toBe(404);
    }
    expect((await get(id)).body.status).not.toBe('Cancelled');
  });
});

/** A Submitted request whose processing always throws (its stored request is unusable), produced for real. */
async function deadLetteredRequest(): Promise<string> {
  const id = newAppointmentId();
  const clientId = suite.demo.clients.all!.clientId;
  await suite.pool.query(
    `INSERT INTO appointment_requests (id, tenant_id, client_id, external_reference, service_type, priority, request,
                                       request_hash)
     VALUES ($1, $2, $3, 'REF-POISON', 'repair', 'urgent', '{"priority": "urgent", "preferredTimeWindows": []}', '\\x00')`,
    [id, suite.demo.tenantId, clientId],
  );
  await suite.pool.query(
    `INSERT INTO appointment_status_history (appointment_request_id, tenant_id, seq, to_status, actor, at)
     VALUES ($1, $2, 1, 'Submitted', 'client', now())`,
    [id, suite.demo.tenantId],
  );
  const bus = testBus();
  try {
    const ids = { tenantId: suite.demo.tenantId, clientId, requestId: null, correlationId: null };
    await bus.produce(topicNames(suite.config.kafka).appointments, [
      {
        key: id,
        value: JSON.stringify(
          envelope('appointment.submitted', 1, ids, { appointmentRequestId: id, externalReference: 'REF-POISON' }),
        ),
      },
    ]);
  } finally {
    await bus.close();
  }
  const view = await untilStatus(id, 'Failed');
  expect(view.history.at(-1)).toMatchObject({
    status: 'Failed',
    actor: 'system',
    reason: expect.stringContaining('could not be processed'),
  });
  return id;
}
