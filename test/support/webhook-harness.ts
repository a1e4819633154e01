import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { webhookCreate } from '../../src/admin/commands/webhook.js';
import type { Config } from '../../src/shared/config.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { startDispatcher } from '../../src/workers/webhooks/dispatcher.js';
import { claimCandidates } from '../../src/workers/webhooks/sql.js';
import type { WorkerMetrics } from '../../src/workers/worker-metrics.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { admin, createClientWithKey, createDemo, type Demo } from './fixtures.js';
import { testConfig } from './gateway.js';
import { claimCountingPool } from './watched-pool.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

// The frame of a webhook integration file, set up by one call at its top level: its own database
// and pool, a demo tenant and a receiver when asked; what a test starts stops after it, extra pools
// end after the file. The settings a file tests (timeouts, retry schedules, breakers) stay in it.

export type Owner = { tenantId: string; clientId: string };

export function webhookHarness(options: {
  poolSize: number;
  demo?: boolean;
  receiver?: boolean;
  /** Its dispatchers' logger name. */
  name?: string;
}) {
  // The receiver is on 127.0.0.1: the admin CLI's target check must let its URLs through.
  process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
  let db: TestDatabase;
  let pool: Pool;
  let demo: Demo;
  let receiver: WebhookReceiver;
  const pools: Pool[] = [];
  const stops: (() => Promise<void>)[] = [];

  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  const endAfterAll = <P extends Pool>(p: P): P => {
    pools.push(p);
    return p;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool(db.url, options.poolSize, 'test');
    if (options.demo) demo = await createDemo(pool);
    if (options.receiver) receiver = await startWebhookReceiver();
  });

  // Each test's dispatchers stop with it: their settings are the test's own. Held requests are
  // answered first: a dispatcher's stop waits for its attempts in flight.
  afterEach(async () => {
    receiver?.release();
    await stopAll();
  });

  afterAll(async () => {
    await receiver?.close();
    await Promise.all([pool, ...pools].map((p) => p?.end()));
    await db?.drop();
  });

  return {
    get db() {
      return db;
    },
    get pool() {
      return pool;
    },
    get demo() {
      return demo;
    },
    get receiver() {
      return receiver;
    },
    /** Runs `stop` after the test (after each test, last given first stops first). */
    stopAfterTest(stop: () => Promise<void>) {
      stops.push(stop);
    },
    /** Stops now what stopAfterTest was given: for a file's own afterEach that must stop them itself. */
    stopAll,
    /** The webhook settings of these (test) environment variables, private targets allowed. */
    settings: (env: Record<string, string> = {}): Config['webhooks'] =>
      testConfig(db.url, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', ...env }).webhooks,
    /** A dispatcher on the file's pool until the test ends; `listen`: woken by NOTIFY too, not only by its poll. */
    dispatch(
      webhooks: Config['webhooks'],
      { metrics, listen = false }: { metrics?: WorkerMetrics; listen?: boolean } = {},
    ) {
      const d = startDispatcher({
        webhooks,
        logger: createLogger('silent', options.name ?? 'test-webhooks'),
        pool,
        metrics,
        databaseUrl: listen ? db.url : undefined,
      });
      stops.push(() => d.stop());
      return d;
    },
    /** A client of a new tenant. */
    async newOwner(): Promise<Owner> {
      const { tenantId } = await createDemo(pool);
      const { clientId } = await createClientWithKey(pool, tenantId, '');
      return { tenantId, clientId };
    },
    /** A new endpoint of the owner for all events, on its own path of the receiver; its path and id. */
    async newEndpoint(owner: Owner, extraArgs: string[] = [], on: WebhookReceiver = receiver) {
      const path = `/hook/${randomUUID()}`;
      const created = await admin(pool, webhookCreate, [
        '--client',
        owner.clientId,
        '--url',
        on.url(path),
        '--events',
        'all',
        ...extraArgs,
      ]);
      return { path, endpointId: created.endpointId as string };
    },
    /** Ends the pool after the file, with the file's own. */
    endAfterAll,
    /** Another pool of the database (a dispatcher's), ended after the file. */
    extraPool(name: string): Pool {
      const p = createPool(db.url, 4, name);
      p.on('error', () => undefined);
      return endAfterAll(p);
    },
    /** A pool whose connections count the looks for due deliveries they complete (claimCandidates: a dispatcher's chances to take one). */
    countingClaims(name: string): { pool: Pool; claims: () => number } {
      const counted = claimCountingPool(db.url, name, claimCandidates);
      endAfterAll(counted.pool);
      return counted;
    },
  };
}
