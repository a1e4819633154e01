import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../support/api-client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { bearer, createDemo } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { spawnGateway, spawnWorkers } from '../support/processes.js';
import { makeTargets } from '../support/targets.js';
import { startThrowawayKafka, type ThrowawayKafka } from '../support/throwaway-kafka.js';
import { scaled } from '../support/time-scale.js';
import { faultConfig, testPool } from './harness.js';

// Issue 13: a clean start (a fresh broker, so its coordinator is still loading and every topic
// is new; a fresh database) and a first batch log no ERROR line, and every line a process writes
// is JSON, so log files can go straight to a log pipeline.
let kafka: ThrowawayKafka;
let db: TestDatabase;

beforeAll(async () => {
  [kafka, db] = await Promise.all([startThrowawayKafka(), createTestDatabase()]);
}, scaled(300_000));

afterAll(async () => {
  await db?.drop();
  await kafka?.destroy();
}, scaled(120_000));

describe('a clean start', () => {
  it(
    'logs JSON only and no ERROR line, through a first batch and a stop',
    async () => {
      const config = faultConfig(db.url, kafka.brokers);
      const env = { LOG_LEVEL: 'info' };
      const gateway = spawnGateway(config, env);
      const workers = spawnWorkers(config, '', env); // every kind
      const url = await gateway.listening(scaled(120_000));
      await workers.running(scaled(120_000));

      const pool = testPool(db.url);
      try {
        const demo = await createDemo(pool);
        const api = await createApiClient(url);
        const sent = await api.post('/api/v1/inbound/targets/batch', {
          headers: bearer(demo.clients.all!.apiKey),
          body: { sourceSystem: 'clean-start', targets: makeTargets(50, 'clean') },
        });
        expect(sent.status, sent.text).toBe(200);
        await eventually(async () => {
          const job = await api.get(`/api/v1/import-jobs/${sent.body.importJobId}`, {
            headers: bearer(demo.clients.all!.apiKey),
          });
          return job.body.status === 'Completed' ? true : undefined;
        }, 120_000);
      } finally {
        await pool.end();
      }
      // On a failure, the process's last lines say why it exited so (a shutdown timeout, a crash).
      const lastLines = (proc: { output(): string }) => proc.output().trim().split('\n').slice(-15).join('\n');
      expect(await workers.kill('SIGTERM'), lastLines(workers)).toBe(0);
      expect(await gateway.kill('SIGTERM'), lastLines(gateway)).toBe(0);

      for (const [name, proc] of [
        ['gateway', gateway],
        ['workers', workers],
      ] as const) {
        const lines = proc.output().split('\n').filter(Boolean);
        const parsed = lines.map((line) => {
          try {
            return JSON.parse(line) as { level?: number; msg?: string };
          } catch {
            return line;
          }
        });
        expect(lines.length, `${name} lines`).toBeGreaterThan(0);
        expect
          .soft(
            parsed.filter((p) => typeof p === 'string'),
            `${name}: lines that are not JSON`,
          )
          .toEqual([]);
        expect
          .soft(
            parsed.filter((p) => typeof p === 'object' && (p.level ?? 0) >= 50),
            `${name}: ERROR lines`,
          )
          .toEqual([]);
      }
    },
    scaled(600_000),
  );
});
