import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterTopic } from '../../src/shared/dead-letters/headers.js';
import { createPool, inTransaction, type Pool } from '../../src/shared/db/pool.js';
import { createTenantPool, tenantScopeRole, type TenantPool } from '../../src/shared/db/tenant-scope.js';
import type { MessageBus } from '../../src/shared/kafka/bus.js';
import { jobsWorker } from '../../src/workers/jobs/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { bearer } from '../support/fixtures.js';
import { eventually, testBus } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';
import { capturedLogger } from '../support/webhook-events.js';

// Issue 40: PostgreSQL answering, but not serving writes. During a failover the old primary may
// stay reachable read-only: every write answers 25006 ("cannot execute INSERT in a read-only
// transaction"). Simulated on this file's own database: default_transaction_read_only for new
// sessions, and every existing session ended, so each connection opened from then on is
// read-only ("demoted"); "promoted" resets it, ending the sessions again or not (connections
// kept from before then still lead to a read-only server, as to an old primary).
const suite = useGatewaySuite();
const databaseName = () => new URL(suite.db.url).pathname.slice(1);

/** A statement on the server's maintenance database (never one of this file's pools). */
async function onServer(sql: string): Promise<void> {
  const url = new URL(suite.db.url);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
const endSessions = () =>
  onServer(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${databaseName()}' AND pid <> pg_backend_pid()`,
  );
async function demote(): Promise<void> {
  await onServer(`ALTER DATABASE ${databaseName()} SET default_transaction_read_only = on`);
  await endSessions();
}
async function promote({ endingSessions }: { endingSessions: boolean }): Promise<void> {
  await onServer(`ALTER DATABASE ${databaseName()} RESET default_transaction_read_only`);
  if (endingSessions) await endSessions();
}

let bus: MessageBus;
const pools: (Pool | TenantPool)[] = [];
beforeAll(() => {
  bus = testBus();
});
// A test that fails midway must not leave the database read-only to the next.
afterEach(async () => {
  await onServer(`ALTER DATABASE ${databaseName()} RESET default_transaction_read_only`);
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await bus?.close();
});

const apiKey = () => suite.demo.clients.all!.apiKey;
const createJob = (externalId: string) =>
  suite.api.post('/api/v1/connect/jobs', {
    headers: bearer(apiKey()),
    body: {
      externalId,
      title: 'Read-only test job',
      jobType: 'REPAIR',
      customer: { name: 'ACME Facilities' },
      site: { address: { line1: 'Hauptstraße 5', postalCode: '10115', city: 'Berlin', countryCode: 'DE' } },
    },
  });
const postBatch = (externalBatchId: string) =>
  suite.api.post('/api/v1/inbound/targets/batch', {
    headers: { ...bearer(apiKey()), 'idempotency-key': externalBatchId },
    body: { sourceSystem: 'read-only-test', externalBatchId, targets: makeTargets(3, externalBatchId, 5) },
  });

describe('PostgreSQL read-only during a failover (25006)', { timeout: scaled(120_000) }, () => {
  it('a worker waits: messages met by a read-only PostgreSQL are not dead-lettered, and are applied once it is writable', async () => {
    // Recorded and produced while PostgreSQL is writable; no worker runs yet.
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await createJob(`RO-WORKER-${Date.now()}-${i}`);
      expect(created.status, created.text).toBe(201);
      ids.push(created.body.fieldJobId as string);
    }
    await demote();
    // Attempts the workers' message schedule allows before dead-lettering a transient failure.
    const schedule = { attempts: 3, baseMs: 50, maxMs: 200 };
    const { logger, lines } = capturedLogger('test-read-only-workers');
    const workers: RunningWorkers = await startWorkers({
      config: suite.config,
      logger,
      kinds: [jobsWorker],
      messageRetry: schedule,
    });
    try {
      const deadLettered = () => lines.filter((l) => l.msg === 'message dead-lettered');
      const readOnlyFailures = new Map<string, number>();
      const failedMore = () => {
        readOnlyFailures.clear();
        for (const l of lines)
          if (l.msg === 'worker attempt failed' && l.err?.code === '25006')
            readOnlyFailures.set(l.origin, (readOnlyFailures.get(l.origin) ?? 0) + 1);
        // Messages behind another of their key wait their turn: each one tried so far.
        return readOnlyFailures.size > 0 && [...readOnlyFailures.values()].every((n) => n > schedule.attempts)
          ? true
          : undefined;
      };
      // Each message tried met the read-only database more often than a transient failure may be
      // tried (or, wrongly, something was dead-lettered).
      await eventually(
        () => (deadLettered().length > 0 ? true : failedMore()),
        60_000,
        () =>
          `each message tried refused (25006) over ${schedule.attempts} times: ${JSON.stringify([...readOnlyFailures])}`,
      );
      expect(
        deadLettered().map((l) => l.err?.message),
        'messages dead-lettered while PostgreSQL was read-only',
      ).toEqual([]);
      const verdicts = lines.filter((l) => l.msg === 'worker attempt failed' && l.err?.code === '25006');
      expect(verdicts.filter((l) => l.verdict !== 'outage').map((l) => l.verdict)).toEqual([]);

      await promote({ endingSessions: true });
      const materialized = async () =>
        (
          await suite.pool.query(
            `SELECT count(*) FILTER (WHERE materialized_at IS NOT NULL)::int AS done,
                    count(*) FILTER (WHERE failed_at IS NOT NULL)::int AS failed
               FROM job_requests WHERE field_job_id = ANY($1)`,
            [ids],
          )
        ).rows[0] as { done: number; failed: number };
      await eventually(
        async () => ((await materialized()).done === ids.length ? true : undefined),
        60_000,
        'every job request materialized once PostgreSQL is writable',
      );
      expect(await materialized()).toEqual({ done: ids.length, failed: 0 });
      const { rows } = await suite.pool.query(`SELECT count(*)::int AS n FROM field_jobs WHERE id = ANY($1::uuid[])`, [
        ids,
      ]);
      expect(rows[0].n).toBe(ids.length);
      expect(deadLettered()).toEqual([]);
      const dlq = deadLetterTopic(jobsWorker.topics(suite.config.kafka)[0]!.topic);
      const offsets = await bus.topicOffsets(dlq, 10_000);
      expect(
        offsets.reduce((sum, p) => sum + p.high, 0),
        `messages in ${dlq}`,
      ).toBe(0);
    } finally {
      await workers.stop();
    }
  });

  it('the gateway answers writes 503 + Retry-After (never 500) while read-only, and accepts them again once writable, without a restart', async () => {
    await demote();
    for (const res of [await createJob(`RO-GATEWAY-${Date.now()}`), await postBatch(`RO-GATEWAY-${Date.now()}`)]) {
      expect(res.status, res.text).toBe(503);
      expect(res.headers.get('retry-after'), 'Retry-After').toMatch(/^\d+$/);
    }
    // The gateway's connections stay on the server that refused their writes (as to an old
    // primary): each one that saw 25006 must be dropped for writes to succeed again.
    await promote({ endingSessions: false });
    const statuses: number[] = [];
    const job = await eventually(
      async () => {
        const res = await createJob(`RO-GATEWAY-AFTER-${Date.now()}`);
        statuses.push(res.status);
        return res.status === 201 ? res : undefined;
      },
      60_000,
      () => `a job created once PostgreSQL is writable (statuses: ${statuses.join(' ')})`,
    );
    expect(job.body.fieldJobId).toEqual(expect.any(String));
    expect(
      statuses.filter((s) => s !== 503 && s !== 201),
      'statuses other than 503 while connections drop',
    ).toEqual([]);
    const batch = await eventually(
      async () => {
        const res = await postBatch(`RO-GATEWAY-AFTER-${Date.now()}`);
        statuses.push(res.status);
        return res.status === 200 ? res : undefined;
      },
      60_000,
      () => `a batch accepted once PostgreSQL is writable (statuses: ${statuses.join(' ')})`,
    );
    expect(batch.body.importJobId).toBeDefined();
    expect(statuses.filter((s) => s !== 503 && s !== 201 && s !== 200)).toEqual([]);
  });

  it('a pool drops a connection that answered 25006: the next write through the same pool succeeds once PostgreSQL is writable', async () => {
    await suite.pool.query('CREATE TABLE IF NOT EXISTS read_only_probe (n int)');
    await suite.pool.query(`GRANT INSERT ON read_only_probe TO ${tenantScopeRole}`);
    await demote();
    // A pool of one connection per way of writing: a connection kept after the refusal would
    // serve that pool's next write.
    const tenantId = suite.demo.tenantId;
    const insert = 'INSERT INTO read_only_probe VALUES (1)';
    const onePool = (): Pool => {
      const pool = createPool(suite.db.url, 1, 'test-read-only');
      pools.push(pool);
      return pool;
    };
    const oneTenantPool = (): TenantPool => {
      const pool = createTenantPool(suite.db.url, 1, 'test-read-only-tenant');
      pools.push(pool);
      return pool;
    };
    const [query, transaction, tenantTransaction, tenantRun] = [onePool(), onePool(), oneTenantPool(), oneTenantPool()];
    const writes: Record<string, () => Promise<unknown>> = {
      'pool.query (pg-pool destroys the connection after any error)': () => query.query(insert),
      inTransaction: () => inTransaction(transaction, (tx) => tx.query(insert)),
      'tenant pool transaction': () => tenantTransaction.transaction(tenantId, (tx) => tx.query(insert)),
      'tenant pool run': () => tenantRun.run(tenantId, (tx) => tx.query(insert)),
    };
    for (const [name, write] of Object.entries(writes)) {
      await expect(write(), `${name} while read-only`).rejects.toMatchObject({ code: '25006' });
    }
    await promote({ endingSessions: false });
    const after: Record<string, string> = {};
    for (const [name, write] of Object.entries(writes)) {
      after[name] = await write().then(
        () => 'ok',
        (err: { code?: string; message: string }) => `${err.code ?? ''} ${err.message}`,
      );
    }
    expect(after).toEqual(Object.fromEntries(Object.keys(writes).map((name) => [name, 'ok'])));
  });
});
