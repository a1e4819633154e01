import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { startThrowawayKafka } from '../support/throwaway-kafka.js';
import { scaled } from '../support/time-scale.js';

// The broker of this file's own goes away. Writes must answer 503 + Retry-After (fast once the
// broker is known down, without drawing job numbers), reads must not wait behind writes that wait
// for Kafka (separate connection budgets), health says Degraded, and writes work again after.
let kafka: Awaited<ReturnType<typeof startThrowawayKafka>>;
beforeAll(async () => {
  kafka = await startThrowawayKafka();
});
afterAll(async () => {
  await kafka?.destroy();
});
const suite = useGatewaySuite({
  env: () => ({
    KAFKA_BROKERS: kafka.brokers,
    KAFKA_PRODUCE_TIMEOUT_MS: '3000',
    // Few connections, so writes waiting for Kafka would take them all if they shared a pool.
    DATABASE_POOL_MAX: '2',
    DATABASE_EDGE_POOL_MAX: '2',
  }),
});

let n = 0;
const jobKey = () => suite.demo.clients.all!.apiKey;
const createJob = () =>
  suite.api.post('/api/v1/connect/jobs', {
    headers: bearer(jobKey()),
    body: {
      externalId: `KO-${++n}-${Date.now()}`,
      title: 'Replace boiler pump',
      jobType: 'REPAIR',
      priority: 'High',
      customer: { name: 'ACME Facilities' },
      site: { address: { line1: 'Hauptstraße 5', postalCode: '10115', city: 'Berlin', countryCode: 'DE' } },
    },
  });
const read = () => suite.api.get('/api/v1/connect/inventory/balances', { headers: bearer(jobKey()) });
const health = () => suite.api.get('/api/v1/integration/health', { headers: bearer(jobKey()) });

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; doneAt: number }> {
  const started = performance.now();
  const value = await fn();
  const doneAt = performance.now();
  return { value, ms: doneAt - started, doneAt };
}

const p = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

const jobCounter = async () =>
  Number(
    (await suite.pool.query(`SELECT coalesce(max(value), 0) AS v FROM tenant_sequences WHERE name = 'job_number'`))
      .rows[0].v,
  );

describe('while the broker is down', () => {
  it(
    'keeps reads off the writes’ connections, refuses writes fast with 503, reports Degraded',
    async () => {
      // A fresh broker may take longer than the produce timeout for its first topics on a loaded
      // machine (503 then): wait until it accepts.
      await eventually(async () => ((await createJob()).status === 201 ? true : undefined), 60_000, 'accepting');
      const healthy: number[] = [];
      for (let i = 0; i < 40; i++) healthy.push((await timed(read)).ms);

      await kafka.stop();
      // Writes that meet the outage first wait up to the produce timeout on edge connections;
      // reads sent meanwhile must be answered before those writes give up.
      const writes = Array.from({ length: 6 }, () => timed(createJob));
      await new Promise((r) => setTimeout(r, 200));
      const reads = await Promise.all(Array.from({ length: 6 }, () => timed(read)));
      const settledWrites = await Promise.all(writes);
      for (const r of reads) expect(r.value.status).toBe(200);
      const firstWriteAnswer = Math.min(...settledWrites.map((w) => w.doneAt));
      expect(Math.max(...reads.map((r) => r.doneAt))).toBeLessThan(firstWriteAnswer);
      for (const w of settledWrites) {
        expect(w.value.status).toBe(503);
        expect(Number(w.value.headers.get('retry-after'))).toBeGreaterThan(0);
      }

      // Known down now: writes are refused without touching the job-number counter.
      const counterBefore = await jobCounter();
      const refused = [];
      for (let i = 0; i < 10; i++) refused.push(await timed(createJob));
      for (const r of refused) expect(r.value.status).toBe(503);
      expect(await jobCounter()).toBe(counterBefore);

      const during: number[] = [];
      for (let i = 0; i < 40; i++) during.push((await timed(read)).ms);
      const report = await health();
      expect(report.status).toBe(200);
      expect(report.body.status).toBe('Degraded');
      expect(report.body.checks.postgres.status).toBe('Up');

      await kafka.start();
      await eventually(async () => ((await createJob()).status === 201 ? true : undefined), 120_000, 'writes again');
      expect((await health()).body.status).toBe('Healthy');
      console.log(
        `kafka outage: read p50/p99 healthy ${p(healthy, 0.5).toFixed(1)}/${p(healthy, 0.99).toFixed(1)} ms, ` +
          `down ${p(during, 0.5).toFixed(1)}/${p(during, 0.99).toFixed(1)} ms ` +
          `(p99 ratio ${(p(during, 0.99) / p(healthy, 0.99)).toFixed(2)}); first writes 503 after ` +
          `${settledWrites.map((w) => Math.round(w.ms)).join(', ')} ms; known-down writes 503 after ` +
          `p50 ${p(
            refused.map((r) => r.ms),
            0.5,
          ).toFixed(1)} ms`,
      );
    },
    scaled(300_000),
  );
});
