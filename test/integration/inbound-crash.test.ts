import { describe, expect, it } from 'vitest';
import { untilNotRefused } from '../support/api-client.js';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { spawnWorkers } from '../support/processes.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

// 100,000 targets; the worker process is SIGKILLed several times while it applies them,
// restarted each time; afterwards rows and counters must be exact. The batches go in at once:
// the one client is not held to a tenant's upload quota (test/e2e/upload-quota.test.ts has that).
// Small chunks (about 40 targets; 512 KiB holds 1,300): a worker applies the default's 80 chunks
// in about a second on a quiet machine, before the first kill, and more chunks mean more places
// for a kill to land.
const suite = useGatewaySuite({
  env: () => ({
    UPLOAD_BYTES_PER_SECOND: String(1024 * 1024 * 1024),
    UPLOAD_BYTES_PER_SECOND_PER_TENANT: String(1024 * 1024 * 1024),
    INBOUND_CHUNK_MAX_BYTES: '16384',
  }),
});
const total = 100_000;
const perBatch = 10_000;

const progress = async () =>
  (
    await suite.pool.query(
      `SELECT coalesce(sum(applied_count), 0)::int AS applied, coalesce(sum(failed_count), 0)::int AS failed,
              count(*) FILTER (WHERE status = 'Completed')::int AS completed, count(*)::int AS jobs
         FROM import_jobs`,
    )
  ).rows[0] as { applied: number; failed: number; completed: number; jobs: number };

describe('inbound worker crash safety', () => {
  it(
    'applies exactly 100,000 targets despite repeated SIGKILLs',
    async () => {
      const targets = makeTargets(total, 'crash');
      for (let i = 0; i < total; i += perBatch) {
        // A refusal on a busy machine (503 with Retry-After) is retried, as a client does.
        const res = await untilNotRefused(
          () =>
            suite.api.post('/api/v1/inbound/targets/batch', {
              headers: bearer(suite.demo.clients.all!.apiKey),
              body: { sourceSystem: 'crash', externalBatchId: `crash-${i}`, targets: targets.slice(i, i + perBatch) },
            }),
          scaled(120_000),
        );
        expect(res.status).toBe(200);
      }

      const killedAt: number[] = [];
      for (let kill = 0; kill < 3; kill++) {
        const worker = spawnWorkers(suite.config, 'inbound,inbound-express', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
        await worker.running();
        const start = (await progress()).applied;
        if (start === total) {
          await worker.kill('SIGKILL'); // the one before finished before its kill: none left to interrupt
          break;
        }
        // Let it apply some chunks, then kill it mid-run.
        await eventually(async () => ((await progress()).applied > start ? true : undefined), 60_000, 'progress');
        await new Promise((r) => setTimeout(r, 300 + kill * 200));
        await worker.kill('SIGKILL');
        killedAt.push((await progress()).applied);
      }
      expect(killedAt.some((applied) => applied > 0 && applied < total)).toBe(true);

      const worker = spawnWorkers(suite.config, 'inbound,inbound-express', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
      await worker.running();
      await eventually(
        async () => ((await progress()).completed === 10 ? true : undefined),
        240_000,
        'all jobs completed',
      );
      await worker.kill('SIGTERM');

      expect(await progress()).toEqual({ applied: total, failed: 0, completed: 10, jobs: 10 });
      const { rows } = await suite.pool.query(
        `SELECT (SELECT count(*)::int FROM targets WHERE source_system = 'crash') AS targets,
              (SELECT count(*)::int FROM import_job_chunks) AS chunks,
              (SELECT sum(chunk_count)::int FROM import_jobs) AS expected_chunks,
              (SELECT sum(chunks_done)::int FROM import_jobs) AS chunks_done`,
      );
      expect(rows[0].targets).toBe(total);
      expect(rows[0].chunks).toBe(rows[0].expected_chunks);
      expect(rows[0].chunks_done).toBe(rows[0].expected_chunks);
    },
    scaled(600_000),
  );
});
