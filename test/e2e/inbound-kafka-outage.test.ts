import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { spawnWorkers } from '../support/processes.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';
import { startThrowawayKafka } from '../support/throwaway-kafka.js';
import { scaled } from '../support/time-scale.js';

// Kafka stops while clients post: no 2xx without Kafka's ack (503 + Retry-After instead), and
// every 2xx answer's targets are applied once Kafka is back. Uses a broker of its own.
let kafka: Awaited<ReturnType<typeof startThrowawayKafka>>;
let worker: ReturnType<typeof spawnWorkers>;
beforeAll(async () => {
  kafka = await startThrowawayKafka();
});
afterAll(async () => {
  await worker?.kill('SIGTERM');
  await kafka?.destroy();
});
const suite = useGatewaySuite({ env: () => ({ KAFKA_BROKERS: kafka.brokers, KAFKA_PRODUCE_TIMEOUT_MS: '2000' }) });

describe('inbound while Kafka is down', () => {
  it(
    'answers 503 with Retry-After while down and applies every accepted target after',
    async () => {
      worker = spawnWorkers(suite.config, 'inbound', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
      await worker.running();
      let n = 0;
      const push = () =>
        suite.api.post('/api/v1/inbound/targets', {
          headers: bearer(suite.demo.clients.all!.apiKey),
          body: { sourceSystem: 'outage', ...makeTargets(1, `o${n++}`)[0] },
        });
      const accepted: number[] = [];
      const record = (res: Awaited<ReturnType<typeof push>>) => {
        if (res.status === 200) accepted.push(res.body.importJobId);
        return res;
      };

      // A fresh broker may take longer than the produce timeout for its first topics on a loaded
      // machine (503 then): wait until it accepts, as after the restart below.
      await eventually(async () => (record(await push()).status === 200 ? true : undefined), 60_000, 'accepting');
      for (let i = 0; i < 2; i++) expect(record(await push()).status).toBe(200);
      await kafka.stop();
      const during = await Promise.all([push(), push(), push()]);
      for (const res of during) {
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      await kafka.start();
      await eventually(async () => (record(await push()).status === 200 ? true : undefined), 60_000, 'accepting again');
      for (let i = 0; i < 3; i++) record(await push());

      await eventually(
        async () => {
          const { rows } = await suite.pool.query(
            `SELECT count(*)::int AS n FROM import_jobs WHERE id = ANY($1::bigint[]) AND status = 'Completed' AND applied_count = 1`,
            [accepted],
          );
          return rows[0].n === accepted.length ? true : undefined;
        },
        90_000,
        'every accepted target applied',
      );
      // Nothing but the accepted requests left a job behind.
      const { rows } = await suite.pool.query('SELECT count(*)::int AS n FROM import_jobs');
      expect(rows[0].n).toBe(accepted.length);
    },
    scaled(240_000),
  );
});
