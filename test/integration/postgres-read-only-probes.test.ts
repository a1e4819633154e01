import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEventWaits, eventChannel, type EventWaits } from '../../src/gateway/events/notifications.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../support/throwaway-postgres.js';
import { scaled } from '../support/time-scale.js';
import { capturedLogger } from '../support/webhook-events.js';

// Issue 40: a PostgreSQL that answers but does not accept writes (an old primary kept reachable
// read-only after a failover, or a standby behind a misrouted proxy). `SELECT 1` answers there,
// so readiness and health called it healthy, and the event feed's LISTEN connection stayed on it,
// hearing nothing. "Demoted" as in postgres-read-only.test.ts: default_transaction_read_only on
// this file's database, so every session opened from then on is read-only.
const suite = useGatewaySuite({ env: () => ({ WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0' }) });
const databaseName = () => new URL(suite.db.url).pathname.slice(1);

/** One statement on a connection of its own (to the server's maintenance database by default). */
async function once<R extends pg.QueryResultRow = pg.QueryResultRow>(
  sql: string,
  { url = suite.db.url, database = 'postgres' }: { url?: string; database?: string | null } = {},
): Promise<R[]> {
  const target = new URL(url);
  if (database !== null) target.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: target.toString() });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
const setReadOnly = (on: boolean) =>
  once(
    on
      ? `ALTER DATABASE ${databaseName()} SET default_transaction_read_only = on`
      : `ALTER DATABASE ${databaseName()} RESET default_transaction_read_only`,
  );
const endSessions = (where = 'true') =>
  once(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = '${databaseName()}' AND pid <> pg_backend_pid() AND ${where}`,
  );
/** The event feed's LISTEN connections of this database (what pg_stat_activity knows of them). */
const listeners = (url = suite.db.url) =>
  once<{ pid: number; started: Date }>(
    `SELECT pid, backend_start AS started FROM pg_stat_activity
      WHERE datname = '${new URL(url).pathname.slice(1)}' AND application_name = 'connect-gateway-events'`,
    { url },
  );
/** pg_notify as a trigger does at commit, on a writable session opened now. */
const notify = (clientId: string, url = suite.db.url) =>
  once(`SELECT pg_notify('${eventChannel}', '${clientId}')`, { url, database: null });

// A test that fails midway must not leave the database read-only to the next.
afterEach(() => setReadOnly(false));

describe('PostgreSQL answering read-only: probes and the event feed notice', { timeout: scaled(180_000) }, () => {
  it('gateway /readyz and health, and a worker /readyz, report PostgreSQL down as read-only while it is, and ready again after, by themselves', async () => {
    const ready = async () => {
      const res = await fetch(`${suite.gateway.url}/readyz`);
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const health = () =>
      suite.api.get('/api/v1/integration/health', { headers: bearer(suite.demo.clients.all!.apiKey) });
    let workerUrl = '';
    const { logger } = capturedLogger('test-read-only-probes');
    const workers: RunningWorkers = await startWorkers({
      config: suite.config,
      logger,
      kinds: [],
      serve: { onListening: (url) => (workerUrl = url) },
    });
    const workerReady = async () => {
      const res = await fetch(`${workerUrl}/readyz`);
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    try {
      expect((await ready()).status).toBe(200);
      expect((await workerReady()).status).toBe(200);
      expect((await health()).body).toMatchObject({ status: 'Healthy' });

      await setReadOnly(true);
      await endSessions(); // every connection from now on leads to a read-only server

      const gatewayDown = await eventually(
        async () => {
          const r = await ready();
          // A probe on a connection endSessions() just terminated answers 503 with that first (57P01).
          return r.status === 503 && /^PostgreSQL is read-only/.test(r.body.checks?.postgres?.error) ? r : undefined;
        },
        30_000,
        'gateway /readyz 503',
      );
      expect(gatewayDown.body).toMatchObject({
        ready: false,
        checks: { postgres: { status: 'Down' }, kafka: { status: 'Up' } },
      });
      expect(gatewayDown.body.checks.postgres.error).toMatch(/^PostgreSQL is read-only/);
      const workerDown = await eventually(
        async () => {
          const r = await workerReady();
          return r.status === 503 && /^PostgreSQL is read-only/.test(r.body.checks?.postgres?.error) ? r : undefined;
        },
        30_000,
        'worker /readyz 503',
      );
      expect(workerDown.body).toMatchObject({
        ready: false,
        state: 'running',
        checks: { postgres: { status: 'Down' } },
      });
      expect(workerDown.body.checks.postgres.error).toMatch(/^PostgreSQL is read-only/);
      // The health report says which dependency is degraded, and how.
      const report = await health();
      expect(report.status).toBe(200);
      expect(report.body).toMatchObject({
        status: 'Unhealthy',
        checks: { postgres: { status: 'Down' }, kafka: { status: 'Up', error: null } },
      });
      expect(report.body.checks.postgres.error).toMatch(/^PostgreSQL is read-only/);

      // "Promoted" without ending any session: connections opened meanwhile still lead to a
      // read-only server; the probes drop those, so readiness comes back by itself.
      await setReadOnly(false);
      await eventually(async () => ((await ready()).status === 200 ? true : undefined), 30_000, 'gateway /readyz 200');
      await eventually(
        async () => ((await workerReady()).status === 200 ? true : undefined),
        30_000,
        'worker /readyz 200',
      );
      expect((await ready()).body).toMatchObject({
        ready: true,
        checks: { postgres: { status: 'Up', error: null }, kafka: { status: 'Up' } },
      });
      await eventually(
        async () => ((await health()).body.status === 'Healthy' ? true : undefined),
        30_000,
        'health Healthy',
      );
    } finally {
      await workers.stop();
    }
  });

  describe('the event feed LISTEN connection', () => {
    let waits: EventWaits | undefined;
    let abort: AbortController;
    beforeEach(() => {
      waits = undefined;
      abort = new AbortController();
    });
    afterEach(async () => {
      abort.abort();
      await waits?.close();
    });
    const waiterOf = (w: EventWaits, clientId: string) => {
      const waiter = w.enter({ clientId, tenantId: `tenant-${clientId}` });
      if (!waiter) throw new Error('no waiter');
      return waiter;
    };

    it('does not stay on a read-only server: it reconnects once the database is writable and wakes the waiting long-polls', async () => {
      const { logger, lines } = capturedLogger('test-event-listen');
      waits = createEventWaits(suite.db.url, { perClient: 4, perTenant: 4, max: 4 }, logger, { checkMs: 200 });
      const waiter = waiterOf(waits, 'ro-client');
      // Connected: the first LISTEN wakes the waiter (it re-reads).
      expect(await waiter.next(scaled(30_000), abort.signal)).toBe('woken');
      const [first] = await listeners();
      expect(first).toBeDefined();

      // Demoted, and the LISTEN connection ended: whatever it connects to next is read-only.
      await setReadOnly(true);
      await endSessions(`application_name = 'connect-gateway-events'`);
      await eventually(
        async () =>
          (await listeners()).some((l) => l.pid !== first!.pid) || lines.some((l) => l.err?.code === '25006')
            ? true
            : undefined,
        30_000,
        'the LISTEN connection to come back to (or be refused by) the read-only server',
      );

      // Promoted (same address, writable again). A long-poll waiting from before must be woken
      // by the LISTEN connection's own return to a writable session. (Both taken before the
      // promotion: a reconnect may succeed at once, and its wake must not be missed.)
      await waiter.next(0, abort.signal); // forget any wake from before
      const woken = waiter.next(scaled(60_000), abort.signal);
      const promotedAt = (await once<{ now: Date }>('SELECT clock_timestamp() AS now'))[0]!.now;
      await setReadOnly(false);
      expect(await woken).toBe('woken');
      const back = (await listeners()).find((l) => l.started > promotedAt);
      expect(back).toBeDefined();
      expect(back!.pid).not.toBe(first!.pid);
      // And it hears the commits again.
      const heard = waiter.next(scaled(60_000), abort.signal);
      await notify('ro-client');
      expect(await heard).toBe('woken');
    });

    it('leaves an old primary that turned read-only while the address moved to the new one, and hears the new primary', async () => {
      // The old primary: a cluster of this test's own, with a database of the same name (the
      // LISTEN connection needs nothing in it). The new one: this file's database. A proxy in
      // front plays the moving address: new connections go where it points now, connections
      // made before stay where they were (as through a virtual IP or HAProxy).
      let oldPrimary: ThrowawayPostgres | undefined;
      let proxy: SwitchingProxy | undefined;
      try {
        oldPrimary = await startThrowawayPostgres();
        const oldUrl = oldPrimary.url;
        await once(`CREATE DATABASE ${databaseName()}`, { url: oldUrl });
        const oldDb = new URL(oldUrl);
        oldDb.pathname = `/${databaseName()}`;
        proxy = await startSwitchingProxy(oldPrimary.port);
        const viaProxy = new URL(suite.db.url);
        viaProxy.host = `127.0.0.1:${proxy.port}`;

        waits = createEventWaits(
          viaProxy.toString(),
          { perClient: 4, perTenant: 4, max: 4 },
          capturedLogger('x').logger,
          {
            checkMs: 200,
          },
        );
        const waiter = waiterOf(waits, 'moved-client');
        expect(await waiter.next(scaled(30_000), abort.signal)).toBe('woken');
        expect(await listeners(oldDb.toString())).toHaveLength(1);
        const heardOld = waiter.next(scaled(30_000), abort.signal);
        await notify('moved-client', oldDb.toString());
        expect(await heardOld).toBe('woken');

        // Failover: the old primary stays up, read-only for every session (its own included);
        // the address leads to the new primary from now on.
        await once(`ALTER SYSTEM SET default_transaction_read_only = on`, { url: oldUrl });
        await once(`SELECT pg_reload_conf()`, { url: oldUrl });
        proxy.pointTo(Number(new URL(suite.db.url).port || 5432));

        // A long-poll waiting now is woken when the LISTEN connection moves to the new primary
        // (it may have missed notifications), and hears the new primary's commits from then on.
        const moved = waiter.next(scaled(60_000), abort.signal);
        const onNew = await eventually(
          async () => (await listeners())[0],
          30_000,
          'a LISTEN connection on the new primary',
        );
        expect(onNew).toBeDefined();
        expect(await moved).toBe('woken');
        const heardNew = waiter.next(scaled(60_000), abort.signal);
        await notify('moved-client');
        expect(await heardNew).toBe('woken');
        await eventually(
          async () => ((await listeners(oldDb.toString())).length === 0 ? true : undefined),
          30_000,
          'the LISTEN connection to the old primary closed',
        );
      } finally {
        await waits?.close();
        await proxy?.close();
        await oldPrimary?.destroy();
      }
    });
  });
});

type SwitchingProxy = { port: number; pointTo(port: number): void; close(): Promise<void> };

/** A TCP proxy on 127.0.0.1: each new connection goes to the port it points to then. */
async function startSwitchingProxy(initialPort: number): Promise<SwitchingProxy> {
  let target = initialPort;
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(target, '127.0.0.1');
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    pointTo: (port) => (target = port),
    close: () =>
      new Promise<void>((resolve) => {
        sockets.forEach((s) => s.destroy());
        server.close(() => resolve());
      }),
  };
}
