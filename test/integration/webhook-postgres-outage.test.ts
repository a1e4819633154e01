import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { admin, createClientWithKey, createDemo, type Demo } from '../support/fixtures.js';
import { testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../support/throwaway-postgres.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { capturedLogger, raiseFieldJobEvents } from '../support/webhook-events.js';

// PostgreSQL dies (pg_ctl stop -m immediate) while the dispatcher has attempts in flight and
// events waiting, and comes back: the dispatcher neither crashes nor stops, it backs off and goes
// on; every event is delivered at least once, and events raised afterwards are delivered too.
// The cluster is the test's own (throwaway), never the machine's server.

process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
const events = 60;
const held = 4; // requests the receiver holds open across the outage
const concurrency = 6;

let pg: ThrowawayPostgres;
let pool: Pool;
let demo: Demo;
let receiver: WebhookReceiver;
const pools: Pool[] = [];

/** A pool whose dying connections (idle or checked out) are not unhandled 'error' events. */
function survivingPool(url: string, max: number, name: string): Pool {
  const p = createPool(url, max, name);
  p.on('error', () => undefined);
  p.on('connect', (client) => client.on('error', () => undefined));
  pools.push(p);
  return p;
}

beforeAll(async () => {
  pg = await startThrowawayPostgres();
  pool = survivingPool(pg.url, 4, 'test');
  demo = await createDemo(pool);
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await Promise.all(pools.map((p) => p.end()));
  await pg?.destroy();
});

const raise = (clientId: string, n: number) =>
  raiseFieldJobEvents(pool, { tenantId: demo.tenantId, clientId }, n, 'OUTAGE');

describe('webhook dispatcher and a PostgreSQL outage', () => {
  it(
    'loses nothing when PostgreSQL dies mid-delivery and comes back, and goes on delivering',
    { timeout: 240_000 },
    async () => {
      const config = testConfig(pg.url, {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_TIMEOUT_MS: '10000', // held requests must not time out while pg_ctl stops the server
        WEBHOOK_CONCURRENCY: String(concurrency),
        // Every slot on the one endpoint of one tenant: `concurrency` attempts held open at once.
        WEBHOOK_TENANT_SHARE_PERCENT: '100',
        WEBHOOK_ENDPOINT_CONCURRENCY: String(concurrency),
        WEBHOOK_RETRY_SCHEDULE: '0.2,0.5,1,1,1,1,1,1',
      });
      const { clientId } = await createClientWithKey(pool, demo.tenantId, '');
      const path = `/hook/${randomUUID()}`;
      await admin(pool, webhookCreate, ['--client', clientId, '--url', receiver.url(path), '--events', 'all']);
      // The first requests stay open until PostgreSQL is gone; the others answer slowly, so events
      // are still waiting when it goes.
      receiver.behave(path, (n) => (n <= held ? 'hold' : { status: 200, delayMs: 200 }));
      const ids = await raise(clientId, events);

      const { logger, lines } = capturedLogger('test-webhooks-outage');
      const dispatcher = startDispatcher({
        webhooks: config.webhooks,
        logger,
        pool: survivingPool(pg.url, 10, 'test-dispatcher'),
      });
      const logged = (msg: string) => lines.filter((l) => String(l.msg).startsWith(msg));
      try {
        await eventually(() => (receiver.heldCount() === held ? true : undefined), 60_000, 'held requests');
        await pg.stop('immediate');
        receiver.release(200); // these attempts succeeded; their outcome cannot be recorded now
        // Every slot now waits to record an attempt it made (so there is nothing to poll for).
        await eventually(
          () => (logged('webhook attempt made but not recorded').length >= 2 * concurrency ? true : undefined),
          60_000,
          'the dispatcher to keep trying to record its attempts',
        );
        const reachedBefore = receiver.received(path).length;
        await pg.start();

        await eventually(
          () =>
            new Set(receiver.received(path).map((r) => r.headers['webhook-id'])).size === events ? true : undefined,
          120_000,
          'every event delivered',
        );
        await eventually(
          async () => {
            const { rows } = await pool.query(
              `SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ANY($1) AND status = 'Succeeded'`,
              [ids],
            );
            return rows[0].n === events ? true : undefined;
          },
          120_000,
          'every delivery recorded Succeeded',
        );

        // Still running: events raised after the outage are delivered too.
        const later = await raise(clientId, 5);
        await receiver.waitFor(path, 5, (r) => later.includes(r.headers['webhook-id']!), 60_000);

        const got = receiver.received(path).map((r) => r.headers['webhook-id']!);
        const distinct = new Set(got);
        const duplicates = got.length - distinct.size;
        console.log(
          `outage test: ${events} + 5 events, ${reachedBefore} requests before PostgreSQL came back; ` +
            `${got.length} requests in all for ${distinct.size} webhook-ids: ` +
            `${duplicates} duplicate(s); ${logged('webhook attempt made but not recorded').length} record retries, ` +
            `${logged('webhook poll failed').length} failed polls, ` +
            `${logged('webhook attempt not begun').length} attempts not begun`,
        );
        expect([...distinct].sort()).toEqual([...ids, ...later].sort());
        // Only attempts the outage cut may be repeated: at most one per slot.
        expect(duplicates).toBeLessThanOrEqual(concurrency);
      } finally {
        await dispatcher.stop();
      }
    },
  );

  it(
    'keeps polling, backing off up to 5 s, while PostgreSQL is down, and picks up new events after',
    { timeout: 240_000 },
    async () => {
      const config = testConfig(pg.url, {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_TIMEOUT_MS: '10000',
      });
      const { clientId } = await createClientWithKey(pool, demo.tenantId, '');
      const path = `/hook/${randomUUID()}`;
      await admin(pool, webhookCreate, ['--client', clientId, '--url', receiver.url(path), '--events', 'all']);
      const { logger, lines } = capturedLogger('test-webhooks-idle');
      const dispatcher = startDispatcher({
        webhooks: config.webhooks,
        logger,
        pool: survivingPool(pg.url, 10, 'test-dispatcher-idle'),
      });
      const failedPolls = () => lines.filter((l) => l.msg === 'webhook poll failed; retrying');
      try {
        await pg.stop('immediate');
        await eventually(() => (failedPolls().length >= 7 ? true : undefined), 120_000, 'seven failed polls');
        await pg.start();
        const ids = await raise(clientId, 10);
        await receiver.waitFor(path, 10, () => true, 120_000);
        expect(new Set(receiver.received(path).map((r) => r.headers['webhook-id']))).toEqual(new Set(ids));
        const waits = failedPolls().map((l) => l.retryInMs as number);
        console.log(`idle outage test: ${waits.length} failed polls, waits ${waits.join(', ')} ms`);
        // The dependencyWait schedule, written out: a wrong formula in retry.ts must fail here.
        expect(waits.slice(0, 7)).toEqual([200, 400, 800, 1600, 3200, 5000, 5000]);
        expect(Math.max(...waits)).toBe(5000);
        expect(lines.some((l) => l.msg === 'webhook polling works again')).toBe(true);
      } finally {
        await dispatcher.stop();
      }
    },
  );
});
