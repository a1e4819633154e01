import { describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { spawnWorkers } from '../support/processes.js';
import { useGatewaySuite } from '../support/suite.js';
import { scaled } from '../support/time-scale.js';

// Jobs are answered (201) while no worker runs; the worker is SIGKILLed before and during
// materialisation and restarted: every job exists exactly once, with one work order.
const suite = useGatewaySuite();
const count = 40;

const counts = async () =>
  (
    await suite.pool.query(
      `SELECT (SELECT count(*)::int FROM field_jobs) AS jobs,
              (SELECT count(DISTINCT id)::int FROM field_jobs) AS distinct_jobs,
              (SELECT count(*)::int FROM work_orders WHERE field_job_id IS NOT NULL) AS work_orders,
              (SELECT count(*)::int FROM job_requests WHERE materialized_at IS NOT NULL) AS materialized`,
    )
  ).rows[0];

describe('jobs worker crash safety', () => {
  it(
    'materialises each answered job exactly once across SIGKILLs',
    async () => {
      // Eight at a time: forty at once could wait past the edge pool's connection wait on a loaded
      // machine (503 service_busy), which is not what this test is about.
      const create = (i: number) =>
        suite.api.post('/api/v1/connect/jobs', {
          headers: bearer(suite.demo.clients.all!.apiKey),
          body: {
            externalId: `CRASH-${i}`,
            title: `Job ${i}`,
            jobType: 'MAINTENANCE',
            customer: { name: 'ACME' },
            site: { address: { line1: 'Main 1', city: 'Berlin', countryCode: 'DE' } },
          },
        });
      const answers = [];
      for (let i = 0; i < count; i += 8) {
        answers.push(...(await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) => create(i + j)))));
      }
      expect(answers.map((a) => (a.status === 201 ? 201 : `${a.status} ${a.text}`))).toEqual(Array(count).fill(201));
      expect((await counts()).jobs).toBe(0);

      const env = { KAFKA_SESSION_TIMEOUT_MS: '6000' };
      const first = spawnWorkers(suite.config, 'jobs', env);
      await first.running();
      await first.kill('SIGKILL'); // right after joining: between answer and materialisation
      const second = spawnWorkers(suite.config, 'jobs', env);
      await second.running();
      await eventually(async () => ((await counts()).jobs > 0 ? true : undefined), 60_000, 'first jobs');
      await second.kill('SIGKILL'); // mid-way
      const third = spawnWorkers(suite.config, 'jobs', env);
      await third.running();
      await eventually(async () => ((await counts()).materialized === count ? true : undefined), 90_000, 'all jobs');
      await third.kill('SIGTERM');

      expect(await counts()).toEqual({ jobs: count, distinct_jobs: count, work_orders: count, materialized: count });
      const { rows } = await suite.pool.query(
        `SELECT count(*)::int AS n FROM field_jobs j JOIN job_requests r ON r.field_job_id = j.id
        WHERE j.job_number = r.job_number AND j.id = ANY($1::uuid[])`,
        [answers.map((a) => a.body.fieldJobId)],
      );
      expect(rows[0].n).toBe(count);
    },
    scaled(300_000),
  );
});
