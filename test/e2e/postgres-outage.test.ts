import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/shared/config.js';
import { createPool, type Pool } from '../../src/shared/db/pool.js';
import type { RunningWorkers } from '../../src/workers/start-workers.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { jobsWorker } from '../../src/workers/jobs/kind.js';
import { createApiClient, type ApiClient, type ApiResponse } from '../support/api-client.js';
import { bearer, createDemo, type Demo } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { makeTargets } from '../support/targets.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../support/throwaway-postgres.js';
import { startTestWorkers } from '../support/workers.js';
import { scaled } from '../support/time-scale.js';

// PostgreSQL (a cluster of this file's own) is stopped, fast and immediate, while clients write
// and read through a gateway and workers running in this process. Nothing may die (an unhandled
// 'error' of a pg client would end this test process), no request may answer anything but its
// success or 503, the health report stays readable, and every acknowledged write is applied.
let server: ThrowawayPostgres;
let pool: Pool;
let config: Config;
let gateway: TestGateway;
let workers: RunningWorkers;
let api: ApiClient;
let demo: Demo;

beforeAll(async () => {
  server = await startThrowawayPostgres();
  pool = createPool(server.url, 2, 'test');
  // AUTH_CACHE_TTL_MS=0: every request looks its key up, so the outage reaches authentication.
  config = testConfig(server.url, { AUTH_CACHE_TTL_MS: '0', KAFKA_PRODUCE_TIMEOUT_MS: '3000' });
  gateway = await startTestGateway(config);
  workers = await startTestWorkers(config, [inboundWorker, inboundExpressWorker, jobsWorker]);
  api = await createApiClient(gateway.url);
  demo = await createDemo(pool);
});

afterAll(async () => {
  await workers?.stop();
  await gateway?.stop();
  await pool?.end();
  await server?.destroy();
});

type Load = { statuses: Map<number, number>; importJobs: number[]; fieldJobs: string[]; missingRetryAfter: number };

/** Clients that keep writing and reading, retrying 503s with the same idempotency key. */
function startLoad(key: string) {
  const load: Load = { statuses: new Map(), importJobs: [], fieldJobs: [], missingRetryAfter: 0 };
  let running = true;
  let n = 0;
  const count = (res: ApiResponse) => {
    load.statuses.set(res.status, (load.statuses.get(res.status) ?? 0) + 1);
    if (res.status === 503 && !res.headers.get('retry-after')) load.missingRetryAfter++;
    return res;
  };
  const untilDone = async (send: () => Promise<ApiResponse>) => {
    for (;;) {
      const res = count(await send());
      if (res.status !== 503) return res;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const writer = async () => {
    while (running) {
      const i = n++;
      const target = await untilDone(() =>
        api.post('/api/v1/inbound/targets', {
          headers: { ...bearer(key), 'idempotency-key': `pg-outage-${i}` },
          body: { sourceSystem: 'pg-outage', ...makeTargets(1, `p${i}`)[0] },
        }),
      );
      if (target.status === 200) load.importJobs.push(target.body.importJobId);
      const job = await untilDone(() =>
        api.post('/api/v1/connect/jobs', {
          headers: { ...bearer(key), 'idempotency-key': `pg-outage-job-${i}` },
          body: {
            externalId: `PGJOB-${i}`,
            title: 'Check the pump',
            jobType: 'REPAIR',
            priority: 'High',
            customer: { name: 'ACME Facilities' },
            site: { address: { line1: 'Hauptstraße 5', postalCode: '10115', city: 'Berlin', countryCode: 'DE' } },
          },
        }),
      );
      if (job.status === 201 || job.status === 200) load.fieldJobs.push(job.body.fieldJobId);
    }
  };
  const reader = async () => {
    while (running) {
      count(await api.get('/api/v1/connect/inventory/balances', { headers: bearer(key) }));
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const done = Promise.all([writer(), writer(), reader()]);
  return {
    load,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const health = () => api.get('/api/v1/integration/health', { headers: bearer(demo.clients.all!.apiKey) });

describe('PostgreSQL stops under load', () => {
  it.each(['immediate', 'fast'] as const)(
    'survives a %s stop: 503 while down, health readable, every acknowledged write applied',
    async (mode) => {
      const key = demo.clients.all!.apiKey;
      expect((await health()).body.status).toBe('Healthy');
      const { load, stop } = startLoad(key);
      await eventually(() => (load.importJobs.length >= 3 ? true : undefined), 60_000, 'load running');

      await server.stop(mode);
      const during = await eventually(
        async () => {
          const res = await health();
          return res.status === 200 && res.body.status === 'Unhealthy' ? res : undefined;
        },
        60_000,
        'health reports Unhealthy',
      );
      expect(during.body.checks.postgres.status).toBe('Down');
      const writesBefore = load.importJobs.length;
      await eventually(() => ((load.statuses.get(503) ?? 0) > 0 ? true : undefined), 60_000, 'a 503 while down');
      await server.start();
      await eventually(() => (load.importJobs.length > writesBefore ? true : undefined), 60_000, 'writes again');
      await stop();

      // Only successes and 503s (with Retry-After), never a 500.
      const statuses = [...load.statuses.keys()].sort();
      expect(
        statuses.every((s) => [200, 201, 503].includes(s)),
        `statuses ${statuses}`,
      ).toBe(true);
      expect(load.missingRetryAfter).toBe(0);
      expect((await health()).body.status).toBe('Healthy');

      // Every acknowledged write is applied, once.
      await eventually(
        async () => {
          const { rows } = await pool.query(
            `SELECT count(*)::int AS n FROM import_jobs WHERE id = ANY($1::bigint[]) AND status = 'Completed' AND applied_count = 1`,
            [load.importJobs],
          );
          return rows[0].n === load.importJobs.length ? true : undefined;
        },
        120_000,
        'every acknowledged import job applied',
      );
      await eventually(
        async () => {
          const { rows } = await pool.query('SELECT count(*)::int AS n FROM field_jobs WHERE id = ANY($1::uuid[])', [
            load.fieldJobs,
          ]);
          return rows[0].n === load.fieldJobs.length ? true : undefined;
        },
        120_000,
        'every acknowledged job materialised',
      );
      const { rows } = await pool.query(
        `SELECT (SELECT count(*)::int FROM targets WHERE source_system = 'pg-outage') AS targets,
                (SELECT count(DISTINCT job_number)::int FROM job_requests) AS numbers,
                (SELECT count(*)::int FROM job_requests) AS requests`,
      );
      expect(rows[0].numbers).toBe(rows[0].requests);
      expect(new Set(load.importJobs).size).toBe(load.importJobs.length);
      console.log(
        `postgres ${mode} stop: ${load.importJobs.length} imports and ${load.fieldJobs.length} jobs acknowledged, ` +
          `statuses ${JSON.stringify(Object.fromEntries(load.statuses))}, targets ${rows[0].targets}`,
      );
    },
    scaled(600_000),
  );
});
