import { describe, expect, it } from 'vitest';
import { useBrokerAndDatabase } from './fault-environment.js';
import { finishScenario, startScenario, waitFor } from './harness.js';
import { scaled } from '../support/time-scale.js';

// Issue 11, scenario B: the broker (one of this file's own; never the shared one) SIGKILLed and,
// separately, stopped (scripts/kafka down) while clients post and read; then brought back. No
// process may exit; while it is down writes answer 503 with Retry-After, reads 200 as usual, the
// integration health 200 "Degraded"; every acknowledged write ends applied exactly once.
const env = useBrokerAndDatabase();

describe.each(['SIGKILL', 'down'] as const)('broker %s under load', (how) => {
  it(
    'loses, duplicates and strands nothing; every process survives and serves again',
    async () => {
      const s = await startScenario({
        name: `kafka-${how}`,
        pool: env.pool,
        databaseUrl: env.db.url,
        brokers: env.kafka.brokers,
        workers: { workers: 'inbound,inbound-express,jobs' },
      });
      const { load } = s;
      const warm = await load.waitForAcks(30, 0, 120_000);

      const fault = load.faultStart();
      if (how === 'SIGKILL') await env.kafka.kill();
      else await env.kafka.stop();
      load.markDown();
      await waitFor(
        () =>
          Date.now() - fault.down! >= 8000 &&
          load.writeAttempts(fault.down!).filter((a) => a.outcome === 503).length >= 5,
        60_000,
      );
      load.markUp();
      await env.kafka.start();
      load.faultEnd();
      const recovered = await load.waitForAcks(30, fault.end!, 180_000);

      const report = await finishScenario(s);
      // Known down: from 2 s after the broker is gone until its restart begins.
      const outage = { from: fault.down! + 2000, to: fault.up! };
      const during = (a: { start: number; end: number }) => a.start >= outage.from && a.end <= outage.to;
      const writesDuring = load.writeAttempts(outage.from, outage.to);
      const readsDuring = load.reads.filter((r) => r.kind !== 'health' && during(r.attempt));
      const health = load.reads.filter((r) => r.kind === 'health' && during(r.attempt));

      expect.soft(warm, 'writes acknowledged before the fault').toBe(true);
      expect.soft(recovered, 'writes acknowledged again after the broker came back').toBe(true);
      expect.soft(report.unexpectedExits, 'processes that exited on their own (or not 0 on SIGTERM)').toEqual([]);
      expect.soft(report.converged, 'every import job and job request settled').toBe(true);
      expect.soft(report.oracle).toEqual(report.expected);
      expect.soft(report.counts.otherNon2xx, `statuses other than 2xx/503/429: ${report.counts.otherStatuses}`).toBe(0);
      expect.soft(report.counts.timeouts, 'requests unanswered after 30 s').toBe(0);
      expect.soft(report.counts.networkErrors, 'connections refused/reset (the gateway was never killed)').toBe(0);
      expect.soft(report.counts.write503WithoutRetryAfter, '503 writes without Retry-After').toBe(0);
      expect.soft(writesDuring.length, 'writes attempted while the broker was down').toBeGreaterThan(0);
      expect
        .soft(
          writesDuring.filter((a) => a.outcome !== 503 || !a.retryAfter).map((a) => `${a.outcome} ${a.retryAfter}`),
          'writes while the broker is down (503 with Retry-After expected)',
        )
        .toEqual([]);
      expect.soft(readsDuring.length, 'reads while the broker was down').toBeGreaterThan(0);
      expect
        .soft(
          readsDuring.filter((r) => r.attempt.outcome !== 200).map((r) => `${r.kind} ${r.attempt.outcome}`),
          'reads while the broker is down (200 expected)',
        )
        .toEqual([]);
      expect.soft(health.length, 'health probes while the broker was down').toBeGreaterThan(0);
      expect
        .soft(
          health
            .filter((r) => !(r.attempt.outcome === 200 && r.bodyStatus === 'Degraded'))
            .map((r) => `${r.attempt.outcome} ${r.bodyStatus}`),
          'integration health while the broker is down (200 Degraded expected)',
        )
        .toEqual([]);
    },
    scaled(600_000),
  );
});
