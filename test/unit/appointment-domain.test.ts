import { describe, expect, it } from 'vitest';
import { checkBusinessRules, maxLeadDays } from '../../src/shared/appointments/business-rules.js';
import { appointmentIdPattern, newAppointmentId, ulid } from '../../src/shared/appointments/ids.js';
import { appointmentRequestSchema, normalizeAppointmentRequest } from '../../src/shared/appointments/request-schema.js';
import { canonicalJson } from '../../src/gateway/http/fingerprint.js';
import {
  appointmentStatuses,
  backOfficeTargetStatuses,
  cancellableStatuses,
  finalStatuses,
  mayTransition,
  type AppointmentStatus,
} from '../../src/shared/appointments/statuses.js';

const minimal = {
  externalReference: 'REF-1',
  serviceType: 'maintenance',
  customer: { name: 'Harbour Hospital' },
  contact: { name: 'Kim Meyer', email: 'kim@example.com' },
  location: { address: { line1: 'Am Hafen 1', city: 'Hamburg', countryCode: 'DE' } },
};

describe('appointment request ids', () => {
  it('are apr_ + a 26-character Crockford ULID, sortable by time', () => {
    const a = newAppointmentId(1_700_000_000_000);
    const b = newAppointmentId(1_700_000_000_001);
    expect(a).toMatch(appointmentIdPattern);
    expect(a).toHaveLength(30);
    expect(a < b).toBe(true);
    expect(a.slice(4, 14)).toBe('01HF7YAT00'); // 1_700_000_000_000 in 10 Crockford characters
  });

  it('encode time and randomness as the ULID spec does', () => {
    expect(ulid(0, Buffer.alloc(10))).toBe('0'.repeat(26));
    expect(ulid(2 ** 48 - 1, Buffer.alloc(10, 0xff))).toBe('7ZZZZZZZZZZZZZZZZZZZZZZZZZ');
    expect(() => ulid(-1)).toThrow(RangeError);
    const ids = new Set(Array.from({ length: 1000 }, () => newAppointmentId(42)));
    expect(ids.size).toBe(1000);
  });
});

describe('the status lifecycle table', () => {
  it('lets the client cancel only from the documented statuses', () => {
    for (const s of appointmentStatuses) {
      expect(mayTransition('client', s, 'Cancelled'), s).toBe(cancellableStatuses.includes(s));
    }
    expect(cancellableStatuses).toEqual([
      'Submitted',
      'Validated',
      'PendingReview',
      'Accepted',
      'Scheduled',
      'Assigned',
    ]);
    expect(mayTransition('client', 'Submitted', 'Accepted')).toBe(false);
  });

  it('leaves the final statuses without any way out', () => {
    for (const from of finalStatuses) {
      for (const to of appointmentStatuses) {
        for (const actor of ['client', 'system', 'back-office'] as const) {
          expect(mayTransition(actor, from, to), `${actor} ${from} → ${to}`).toBe(false);
        }
      }
    }
  });

  it('gives the worker Submitted → Validated/Rejected/Failed and Validated → PendingReview only', () => {
    const system = (from: AppointmentStatus) => appointmentStatuses.filter((to) => mayTransition('system', from, to));
    expect(system('Submitted')).toEqual(['Validated', 'Rejected', 'Failed']);
    expect(system('Validated')).toEqual(['PendingReview']);
    expect(system('PendingReview')).toEqual([]);
  });

  it('gives the back office the statuses of the issue, and reaches every status from Submitted', () => {
    expect([...backOfficeTargetStatuses].sort()).toEqual(
      ['Accepted', 'Assigned', 'Completed', 'InProgress', 'Rejected', 'Scheduled'].sort(),
    );
    const reached = new Set<AppointmentStatus>(['Submitted']);
    for (let changed = true; changed;) {
      changed = false;
      for (const from of [...reached])
        for (const to of appointmentStatuses)
          for (const actor of ['client', 'system', 'back-office'] as const)
            if (!reached.has(to) && mayTransition(actor, from, to)) {
              reached.add(to);
              changed = true;
            }
    }
    expect([...reached].sort()).toEqual([...appointmentStatuses].sort());
  });
});

describe('the submission schema', () => {
  it('accepts a minimal request and fills defaults when stored', () => {
    const parsed = appointmentRequestSchema.parse(minimal);
    const stored = normalizeAppointmentRequest(parsed);
    expect(stored).toMatchObject({
      priority: 'normal',
      preferredTimeWindows: [],
      description: null,
      metadata: {},
      contact: { phone: null, email: 'kim@example.com' },
      customer: { externalId: null, organization: null },
      location: { coordinates: null, address: { line2: null, postalCode: null, region: null } },
    });
  });

  it('refuses unknown fields, bad enums, contact without phone or email, too many windows', () => {
    const bad = appointmentRequestSchema.safeParse({
      ...minimal,
      serviceType: 'teleport',
      priority: 'asap',
      contact: { name: 'x' },
      preferredTimeWindows: Array(6).fill({ start: '2030-01-01T08:00:00Z', end: '2030-01-01T10:00:00Z' }),
      extra: 1,
    });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => i.path.join('.') || i.code);
    expect(paths).toEqual(
      expect.arrayContaining(['serviceType', 'priority', 'contact.phone', 'preferredTimeWindows', 'unrecognized_keys']),
    );
    const phone = appointmentRequestSchema.safeParse({ ...minimal, contact: { name: 'x', phone: '030 1234' } });
    expect(phone.success).toBe(false);
    const window = appointmentRequestSchema.safeParse({
      ...minimal,
      preferredTimeWindows: [{ start: '2030-01-01T10:00:00+01:00', end: '2030-01-01T09:00:00+01:00' }],
    });
    expect(window.success).toBe(false);
  });

  it('hashes equal requests equally whatever the key order', () => {
    const a = normalizeAppointmentRequest(appointmentRequestSchema.parse(minimal));
    const reordered = {
      location: minimal.location,
      contact: { email: 'kim@example.com', name: 'Kim Meyer' },
      customer: minimal.customer,
      serviceType: 'maintenance',
      externalReference: 'REF-1',
      priority: 'normal',
    };
    const b = normalizeAppointmentRequest(appointmentRequestSchema.parse(reordered));
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
  });
});

describe('the business rules of the worker', () => {
  const now = Date.parse('2030-06-01T12:00:00Z');
  const request = (over: Partial<ReturnType<typeof normalizeAppointmentRequest>> = {}) => ({
    ...normalizeAppointmentRequest(appointmentRequestSchema.parse(minimal)),
    ...over,
  });

  it('passes a request without windows, or with windows ahead', () => {
    expect(checkBusinessRules(request(), now)).toEqual({ ok: true });
    const w = { start: '2030-06-02T08:00:00+02:00', end: '2030-06-02T12:00:00+02:00' };
    expect(checkBusinessRules(request({ preferredTimeWindows: [w] }), now)).toEqual({ ok: true });
    // a window still open counts as ahead
    const open = { start: '2030-06-01T11:00:00Z', end: '2030-06-01T13:00:00Z' };
    expect(checkBusinessRules(request({ preferredTimeWindows: [open] }), now).ok).toBe(true);
  });

  it('rejects a window that has ended, one too far ahead, and an urgent request without a phone', () => {
    const past = { start: '2030-05-01T08:00:00Z', end: '2030-05-01T10:00:00Z' };
    const r1 = checkBusinessRules(request({ preferredTimeWindows: [past] }), now);
    expect(r1).toEqual({ ok: false, reason: expect.stringContaining('preferredTimeWindows[0] ended') });
    const far = new Date(now + (maxLeadDays + 1) * 86_400_000).toISOString();
    const r2 = checkBusinessRules(
      request({ preferredTimeWindows: [{ start: far, end: '2099-01-01T00:00:00Z' }] }),
      now,
    );
    expect(r2).toEqual({ ok: false, reason: expect.stringContaining(`more than ${maxLeadDays} days`) });
    const r3 = checkBusinessRules(request({ priority: 'urgent' }), now);
    expect(r3).toEqual({ ok: false, reason: expect.stringContaining('contact.phone') });
    const withPhone = request({ priority: 'urgent', contact: { name: 'x', phone: '+4930123456', email: null } });
    expect(checkBusinessRules(withPhone, now).ok).toBe(true);
  });
});
