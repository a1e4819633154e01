import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishScenario, killAllFleets, startScenario, testPool } from './harness.js';
import { scaled } from '../support/time-scale.js';

// Issue 11, scenario C: the workers, then the gateway, then both at once SIGKILLed while clients
// post and read, and restarted each time. Clients retry (same Idempotency-Key) through refused
// connections and 503s; every acknowledged write ends applied exactly once, none twice.
let db: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = testPool(db.url);
}, scaled(120_000));

afterAll(async () => {
  await killAllFleets();
  await pool?.end();
  await db?.drop();
}, scaled(120_000));

describe('gateway and workers SIGKILLed under load', () => {
  it(
    'loses, duplicates and strands nothing across SIGKILLs and restarts',
    async () => {
      const s = await startScenario({
        name: 'sigkill',
        pool,
        databaseUrl: db.url,
        brokers: inject('kafkaBrokers'),
        workers: { workers: 'inbound,inbound-express,jobs' },
      });
      const { load, fleet } = s;
      const progress: Record<string, boolean> = { warm: await load.waitForAcks(30, 0, 120_000) };

      const rounds: [string, string[]][] = [
        ['workers', ['workers']],
        ['gateway', ['gateway']],
        ['both', ['gateway', 'workers']],
      ];
      for (const [round, names] of rounds) {
        load.faultStart();
        await Promise.all(names.map((n) => fleet.kill(n, 'SIGKILL')));
        load.markDown();
        load.markUp();
        await Promise.all(names.map((n) => fleet.restart(n)));
        load.faultEnd();
        progress[round] = await load.waitForAcks(20, load.windows.at(-1)!.end!, 120_000);
      }

      const report = await finishScenario(s);

      expect.soft(progress, 'writes acknowledged before the kills and after each restart').toEqual({
        warm: true,
        workers: true,
        gateway: true,
        both: true,
      });
      expect.soft(fleet.plannedRestarts).toBe(4);
      expect.soft(report.unexpectedExits, 'processes that exited on their own (or not 0 on SIGTERM)').toEqual([]);
      expect.soft(report.converged, 'every import job and job request settled').toBe(true);
      expect.soft(report.oracle).toEqual(report.expected);
      expect.soft(report.counts.otherNon2xx, `statuses other than 2xx/503/429: ${report.counts.otherStatuses}`).toBe(0);
      expect.soft(report.counts.timeouts, 'requests unanswered after 30 s').toBe(0);
      expect.soft(report.counts.write503WithoutRetryAfter, '503 writes without Retry-After').toBe(0);
    },
    scaled(600_000),
  );
});
