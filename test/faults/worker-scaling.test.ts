import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { finishScenario, killAllFleets, startScenario, testPool, waitFor } from './harness.js';
import { scaled } from '../support/time-scale.js';

// Issue 11, scenario D: a backlog on the inbound topic; while a first `WORKERS=inbound` process
// applies it, a second and a third join the consumer group; then one of them gets SIGTERM. No
// member may die (each is still alive, or exited 0 on its SIGTERM) and the results are exact.
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

const backlogBatches = 50;
const backlogBatchSize = 1000;
// One partition at a time per process, so the backlog lasts while the others join.
const inboundEnv = { WORKER_APPLY_CONCURRENCY: '1' };

describe('inbound workers joining and leaving under load', () => {
  it(
    'no member dies and every acknowledged write is applied exactly once',
    async () => {
      // The jobs worker runs from the start; no inbound worker yet: the inbound topic fills up.
      const s = await startScenario({
        name: 'scale',
        pool,
        databaseUrl: db.url,
        brokers: inject('kafkaBrokers'),
        workers: { jobs: 'jobs' },
      });
      const { load, fleet } = s;
      const applied = async () =>
        (
          await pool.query(`SELECT coalesce(sum(applied_count), 0)::int AS n FROM import_jobs WHERE tenant_id = $1`, [
            s.demo.tenantId,
          ])
        ).rows[0].n as number;

      for (let i = 0; i < backlogBatches; i += 5) {
        await Promise.all(Array.from({ length: 5 }, () => load.write('batch', backlogBatchSize)));
      }
      const backlog = load.acked().reduce((n, w) => n + (w.kind === 'job' ? 0 : w.targets), 0);

      await fleet.workers('inbound-1', 'inbound,inbound-express', inboundEnv);
      const firstApplying = await waitFor(async () => (await applied()) > 0, 120_000);
      const appliedAtJoin = await applied();

      load.faultStart();
      await Promise.all([
        fleet.workers('inbound-2', 'inbound,inbound-express', inboundEnv),
        fleet.workers('inbound-3', 'inbound,inbound-express', inboundEnv),
      ]);
      const appliedWhenJoined = await applied();
      // The group rebalances over all three; let it apply some more with three members.
      const progressWithThree = await waitFor(async () => (await applied()) > appliedWhenJoined, 120_000);
      await new Promise((r) => setTimeout(r, 5000));
      const alive = {
        'inbound-1': fleet.alive('inbound-1'),
        'inbound-2': fleet.alive('inbound-2'),
        'inbound-3': fleet.alive('inbound-3'),
      };

      load.markDown();
      const sigterm = await fleet.kill('inbound-2', 'SIGTERM');
      load.markUp();
      load.faultEnd();
      const recovered = await load.waitForAcks(20, load.windows[0]!.end!, 120_000);
      const stillAlive = {
        gateway: fleet.alive('gateway'),
        jobs: fleet.alive('jobs'),
        'inbound-1': fleet.alive('inbound-1'),
        'inbound-3': fleet.alive('inbound-3'),
      };

      const report = await finishScenario(s);
      console.log(
        `faults[scale]: backlog ${backlog} targets in ${backlogBatches} batches; applied ${appliedAtJoin} when the 2nd and 3rd ` +
          `were started, ${appliedWhenJoined} when both ran; SIGTERMed inbound-2 exited ${JSON.stringify(sigterm)}`,
      );

      expect.soft(firstApplying, 'the first inbound worker applies the backlog').toBe(true);
      expect.soft(appliedAtJoin, 'backlog left when the 2nd and 3rd joined').toBeLessThan(backlog);
      expect.soft(progressWithThree, 'applying goes on with three members').toBe(true);
      expect.soft(recovered, 'writes acknowledged after the SIGTERM').toBe(true);
      expect.soft(alive, 'every member alive after the 2nd and 3rd joined').toEqual({
        'inbound-1': true,
        'inbound-2': true,
        'inbound-3': true,
      });
      expect.soft(sigterm, 'the SIGTERMed member').toEqual({ code: 0, signal: null });
      expect.soft(stillAlive, 'every other process alive after one left').toEqual({
        gateway: true,
        jobs: true,
        'inbound-1': true,
        'inbound-3': true,
      });
      expect.soft(report.unexpectedExits, 'processes that exited on their own (or not 0 on SIGTERM)').toEqual([]);
      expect.soft(report.converged, 'every import job and job request settled').toBe(true);
      expect.soft(report.oracle).toEqual(report.expected);
      expect.soft(report.counts.otherNon2xx, `statuses other than 2xx/503/429: ${report.counts.otherStatuses}`).toBe(0);
      expect.soft(report.counts.timeouts, 'requests unanswered after 30 s').toBe(0);
      expect.soft(report.counts.networkErrors, 'connections refused/reset (the gateway was never killed)').toBe(0);
    },
    scaled(600_000),
  );
});
