import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { webhookEnvelopeSchema, webhookEventTypes } from '../../src/shared/webhooks/event-types.js';
import { newWebhookEventId } from '../../src/shared/webhooks/outbox.js';
import { generateWebhookSecret, signWebhook } from '../../src/shared/webhooks/signing.js';
import { parseWebhookUrl, refusedRange } from '../../src/shared/webhooks/target-policy.js';
import { listedDelayMs } from '../../src/shared/retry.js';
import { matchingSignatures } from '../support/webhook-receiver.js';

describe('webhook signing (Standard Webhooks)', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const s = generateWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(s);
  });

  it('signs so that an independent verifier and the library both accept, and only with the right secret', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({ id: 'evt_x', data: { name: 'Zoë ✓' } });
    const headers = signWebhook('evt_01ARZ3NDEKTSV4RRFFQ69G5FAV', new Date(), body, [secret]);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(matchingSignatures(secret, headers, body)).toBe(1);
    expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
    expect(matchingSignatures(generateWebhookSecret(), headers, body)).toBe(0);
    expect(matchingSignatures(secret, headers, `${body} `)).toBe(0); // any change of the body
    expect(matchingSignatures(secret, { ...headers, 'webhook-id': 'evt_other' }, body)).toBe(0);
  });

  it('carries one signature per valid secret during a rotation', () => {
    const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = signWebhook('evt_1', new Date(), '{}', [current, previous]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const s of [current, previous]) {
      expect(matchingSignatures(s, headers, '{}')).toBe(1);
      expect(() => new Webhook(s).verify('{}', headers)).not.toThrow();
    }
  });

  it('matches the specification example', () => {
    // From the Standard Webhooks specification's test vectors.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const headers = signWebhook('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(1614265330 * 1000), '{"test": 2432232314}', [
      secret,
    ]);
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});

describe('webhook events', () => {
  it('has stable, versioned `<resource>.<verb>` types and evt_ ids', () => {
    expect(webhookEventTypes).toEqual([
      'import_job.completed',
      'import_job.completed_with_errors',
      'import_job.failed',
      'field_job.created',
      'work_order.materials_recorded',
      'appointment_request.status_changed',
    ]);
    const id = newWebhookEventId();
    expect(id).toMatch(/^evt_[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    const envelope = {
      id,
      type: 'import_job.failed',
      version: 1,
      timestamp: new Date().toISOString(),
      tenantId: crypto.randomUUID(),
      clientId: crypto.randomUUID(),
      data: { unknown: true },
    };
    expect(webhookEnvelopeSchema('import_job.failed').safeParse(envelope).success).toBe(false);
  });
});

describe('webhook target policy', () => {
  it('allows only public unicast addresses', () => {
    for (const ok of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(refusedRange(ok), ok).toBeNull();
    const refused: Record<string, string> = {
      '127.0.0.1': 'loopback',
      '127.1.2.3': 'loopback',
      '10.0.0.1': 'private',
      '172.31.255.255': 'private',
      '192.168.0.1': 'private',
      '169.254.169.254': 'linkLocal',
      '100.64.0.1': 'carrierGradeNat',
      '0.0.0.0': 'unspecified',
      '255.255.255.255': 'broadcast',
      '224.0.0.251': 'multicast',
      '192.0.2.1': 'reserved',
      '::1': 'loopback',
      '::': 'unspecified',
      'fe80::1': 'linkLocal',
      'fd12:3456::1': 'uniqueLocal',
      'ff02::1': 'multicast',
      '::ffff:10.0.0.1': 'private',
      '2001:db8::1': 'reserved',
    };
    for (const [address, range] of Object.entries(refused)) expect(refusedRange(address), address).toBe(range);
  });

  it('judges or refuses every IPv6 form that embeds an IPv4 address', () => {
    // Judged as the embedded IPv4: IPv4-mapped, well-known NAT64 (DNS64 answers), ISATAP ids.
    for (const ok of ['::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '64:ff9b::808:808', '2a00:1450::200:5efe:8.8.8.8'])
      expect(refusedRange(ok), ok).toBeNull();
    const refused: Record<string, string> = {
      '::ffff:7f00:1': 'loopback',
      '64:ff9b::127.0.0.1': 'loopback',
      '64:ff9b::a9fe:a9fe': 'linkLocal',
      '64:ff9b::10.1.2.3': 'private',
      '2a00:1450::5efe:10.0.0.1': 'private',
      '2a00:1450::200:5efe:7f00:1': 'loopback',
      '2a00:1450::5efe:169.254.169.254': 'linkLocal',
      // Refused outright whatever they carry.
      '::127.0.0.1': 'ipv4Compatible',
      '::7f00:1': 'ipv4Compatible',
      '::a9fe:a9fe': 'ipv4Compatible',
      '::8.8.8.8': 'ipv4Compatible',
      '::0.0.0.2': 'ipv4Compatible',
      '64:ff9b:1::7f00:1': 'rfc6052',
      '64:ff9b:1::808:808': 'rfc6052',
      '2002:7f00:1::1': '6to4',
      '2002:808:808::1': '6to4',
      '2001:0:7f00:1::1': 'teredo',
      '::ffff:0:127.0.0.1': 'rfc6145',
    };
    for (const [address, range] of Object.entries(refused)) expect(refusedRange(address), address).toBe(range);
  });

  it('accepts only absolute http(s) URLs without credentials or fragments', () => {
    expect(parseWebhookUrl('https://example.com/hooks?x=1').hostname).toBe('example.com');
    for (const bad of ['ftp://x/y', 'javascript:alert(1)', '/relative', 'https://a:b@x.com/', 'https://x.com/#f'])
      expect(() => parseWebhookUrl(bad), bad).toThrow();
  });
});

describe('webhook retry schedule', () => {
  it('defaults to about a day over 8 attempts, with ±20% jitter, then gives up', () => {
    const { retryScheduleMs: schedule } = loadConfig({}).webhooks;
    expect(schedule).toHaveLength(7);
    const total = schedule.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeGreaterThan(20);
    expect(total / 3_600_000).toBeLessThan(30);
    expect(listedDelayMs(schedule, 1, () => 0)).toBe(4000);
    expect(listedDelayMs(schedule, 1, () => 1)).toBe(6000);
    expect(listedDelayMs(schedule, 2, () => 0.5)).toBe(300_000);
    expect(listedDelayMs(schedule, 8)).toBeNull();
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0.2, 1,2.5' }).webhooks.retryScheduleMs).toEqual([200, 1000, 2500]);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1,-2' })).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
  });
});
