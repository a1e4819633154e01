import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webhookAttempts, webhookCreate, webhookList } from '../../src/admin/commands/webhook.js';
import type { Config } from '../../src/shared/config.js';
import { createPool, inTransaction, type Pool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { recordWebhookEvent } from '../../src/shared/webhooks/outbox.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { webhookDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { admin, createClientWithKey, createDemo, type Demo } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Server-side request forgery: endpoints on loopback, private, link-local … addresses are
// refused when registered and again at delivery (the dispatcher here runs without
// WEBHOOK_ALLOW_PRIVATE_TARGETS), unless the operator setting allows them.

let db: TestDatabase;
let pool: Pool;
let config: Config;
let demo: Demo;
let receiver: WebhookReceiver;
let dispatcher: RunningWorkers;
let clientId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 4, 'test');
  config = testConfig(db.url, { WEBHOOK_POLL_INTERVAL_MS: '50', WEBHOOK_RETRY_SCHEDULE: '0.2' });
  expect(config.webhooks.allowPrivateTargets).toBe(false); // the default
  demo = await createDemo(pool);
  clientId = (await createClientWithKey(pool, demo.tenantId, '')).clientId;
  receiver = await startWebhookReceiver();
  dispatcher = await startWorkers({
    config,
    logger: createLogger('silent', 'test-webhooks'),
    kinds: [webhookDispatcher],
  });
});

afterEach(() => {
  delete process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
});

afterAll(async () => {
  await dispatcher?.stop();
  await receiver?.close();
  await pool?.end();
  await db?.drop();
});

const create = (url: string) => admin(pool, webhookCreate, ['--client', clientId, '--url', url, '--events', 'all']);

describe('webhook targets and server-side request forgery', () => {
  it('refuses private, loopback, link-local and other non-public targets at registration', async () => {
    const refused: [string, RegExp][] = [
      [receiver.url('/x'), /127\.0\.0\.1 is in a loopback range/],
      [`http://localhost:${receiver.port}/x`, /localhost resolves to .* loopback/],
      ['http://10.1.2.3/x', /private/],
      ['http://172.16.5.4/x', /private/],
      ['https://192.168.1.10/x', /private/],
      ['http://169.254.169.254/latest/meta-data/', /linkLocal/],
      ['http://100.64.0.1/x', /carrierGradeNat/],
      ['http://0.0.0.0/x', /unspecified/],
      ['http://224.0.0.1/x', /multicast/],
      ['http://240.0.0.1/x', /reserved/],
      ['http://[::1]/x', /loopback/],
      ['http://[fd00::1]/x', /uniqueLocal/],
      ['http://[fe80::1]/x', /linkLocal/],
      ['http://[::ffff:127.0.0.1]/x', /loopback/],
      ['http://[::]/x', /unspecified/],
      // IPv6 forms that embed an IPv4 address (URL turns [::127.0.0.1] into [::7f00:1]).
      ['http://[::127.0.0.1]:8280/', /::7f00:1 is in a ipv4Compatible range/],
      ['http://[::7f00:1]/x', /ipv4Compatible/],
      ['http://[::a9fe:a9fe]/x', /ipv4Compatible/],
      ['http://[64:ff9b::169.254.169.254]/x', /linkLocal/],
      ['http://[64:ff9b:1::a00:1]/x', /rfc6052/],
      ['http://[2002:7f00:1::1]/x', /6to4/],
      ['http://[2001:0:7f00:1::1]/x', /teredo/],
      ['http://[2a00:1450::5efe:10.0.0.1]/x', /private/],
    ];
    for (const [url, reason] of refused) {
      await expect(create(url), url).rejects.toThrow(/--url refused/);
      await expect(create(url), url).rejects.toThrow(reason);
    }
    await expect(create('ftp://example.com/x')).rejects.toThrow(/only http and https/);
    await expect(create('file:///etc/passwd')).rejects.toThrow(/only http and https/);
    await expect(create('https://user:pw@example.com/x')).rejects.toThrow(/credentials/);
    await expect(create('not a url')).rejects.toThrow(/not a valid absolute URL/);
    const { endpoints } = await admin(pool, webhookList, ['--client', clientId]);
    expect(endpoints).toEqual([]);
  });

  it('accepts a public address, and private ones when WEBHOOK_ALLOW_PRIVATE_TARGETS=true', async () => {
    expect((await create('https://93.184.215.14/hooks')).status).toBe('Active');
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
    expect((await create('http://10.1.2.3/x')).status).toBe('Active');
  });

  it('refuses the delivery too, records the refused attempt, and disables the endpoint in the end', async () => {
    process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true'; // registered while allowed (or DNS changed since)
    const other = (await createClientWithKey(pool, demo.tenantId, '')).clientId;
    const literal = await admin(pool, webhookCreate, [
      '--client',
      other,
      '--url',
      receiver.url('/a'),
      '--events',
      'all',
    ]);
    const named = await admin(pool, webhookCreate, [
      '--client',
      other,
      '--url',
      `http://localhost:${receiver.port}/b`,
      '--events',
      'all',
    ]);
    const compatible = await admin(pool, webhookCreate, [
      '--client',
      other,
      '--url',
      `http://[::127.0.0.1]:${receiver.port}/c`,
      '--events',
      'all',
    ]);
    delete process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
    const { eventId } = await inTransaction(pool, (tx) =>
      recordWebhookEvent(tx, {
        tenantId: demo.tenantId,
        clientId: other,
        type: 'import_job.failed',
        data: {
          importJobId: 1,
          kind: 'Single',
          status: 'Failed',
          sourceSystem: 's',
          externalBatchId: null,
          counts: { received: 1, accepted: 1, rejected: 0, applied: 0, failed: 1 },
          failureReason: 'x',
          createdAt: new Date().toISOString(),
          completedAt: new Date().toISOString(),
        },
      }),
    );
    const listed = await eventually(async () => {
      const { endpoints } = await admin(pool, webhookList, ['--client', other]);
      return endpoints.every((e: { status: string }) => e.status === 'Disabled') ? endpoints : undefined;
    });
    const reasons = new Map([
      [literal.endpointId, 'loopback'],
      [named.endpointId, 'loopback'],
      [compatible.endpointId, 'ipv4Compatible'],
    ]);
    for (const e of listed) expect(e.disabledReason).toMatch(reasons.get(e.endpointId)!);
    for (const [endpointId, range] of reasons) {
      const { attempts } = await admin(pool, webhookAttempts, ['--endpoint', endpointId]);
      expect(attempts.map((a: { eventId: string }) => a.eventId)).toEqual([eventId, eventId]);
      for (const a of attempts) {
        expect(a).toMatchObject({ outcome: 'Refused', statusCode: null, responseSnippet: null });
        expect(a.error).toMatch(`${range} range; set WEBHOOK_ALLOW_PRIVATE_TARGETS=true`);
      }
    }
    expect(receiver.received()).toEqual([]); // nothing reached the receiver
  });
});
