import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../support/api-client.js';
import { bearer } from '../support/fixtures.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
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
let stallGateway: TestGateway | undefined;
afterAll(async () => {
  await kafka?.resume();
  await stallGateway?.stop();
  await worker?.kill('SIGTERM');
  await kafka?.destroy();
});
const suite = useGatewaySuite({ env: () => ({ KAFKA_BROKERS: kafka.brokers, KAFKA_PRODUCE_TIMEOUT_MS: '2000' }) });

describe('inbound while Kafka is down', () => {
  it(
    'answers 503 with Retry-After while down and applies every accepted target after',
    async () => {
      worker = spawnWorkers(suite.config, 'inbound,inbound-express', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
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

// A stalled broker (SIGSTOP: connections open, no answer) is not yet known down: writes wait for
// its acknowledgement holding their edge connections, and the next write waits for a connection
// in vain. Its 503 must name Kafka, not PostgreSQL; a write stuck behind a PostgreSQL lock names
// PostgreSQL.
describe('a write that finds every edge connection held', () => {
  it(
    'names Kafka when they wait for a stalled broker, and PostgreSQL when they wait for PostgreSQL',
    async () => {
      const produceTimeoutMs = Math.min(scaled(60_000), 250_000);
      const config = testConfig(suite.db.url, {
        KAFKA_BROKERS: kafka.brokers,
        DATABASE_EDGE_POOL_MAX: '2',
        // One tenant may fill the edge pool here: the test is of a full pool, not of a tenant's share.
        DATABASE_EDGE_TENANT_SHARE_PERCENT: '100',
        KAFKA_PRODUCE_TIMEOUT_MS: String(produceTimeoutMs),
        ORPHAN_GRACE_MS: String(produceTimeoutMs + 60_000),
      });
      stallGateway = await startTestGateway(config);
      const api = await createApiClient(stallGateway.url);
      let n = 0;
      const push = () =>
        api.post('/api/v1/inbound/targets', {
          headers: bearer(suite.demo.clients.all!.apiKey),
          body: { sourceSystem: 'stall', ...makeTargets(1, `s${n++}`)[0] },
        });
      /** Edge transactions of this database that inserted their rows and wait (for Kafka). */
      const twoWaitingOnKafka = async () => {
        const { rows } = await suite.pool.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'connect-gateway-edge'
              AND state = 'idle in transaction'`,
        );
        return rows[0].n >= 2 ? true : undefined;
      };
      await eventually(async () => ((await push()).status === 200 ? true : undefined), 60_000, 'accepting');

      await kafka.pause();
      const held = [push(), push()];
      // A held write answered before it waits would make the wait below hopeless: say so at once,
      // and on a timeout say what the edge connections were doing (this failed three times, unexplained,
      // before pause() waited for the JVM's threads to stop; a failure now names any still running).
      const answered: string[] = [];
      for (const p of held)
        void p.then(async (res) =>
          answered.push(
            `${res.status} ${res.text.slice(0, 300)} (broker threads not stopped: ${(await kafka.unstoppedThreads()).join(' ') || 'none'})`,
          ),
        );
      const edgeStates = async () =>
        JSON.stringify(
          (
            await suite.pool.query(
              `SELECT state, wait_event_type, wait_event, left(query, 80) AS query FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'connect-gateway-edge'`,
            )
          ).rows,
        );
      await eventually(
        async () => {
          if (answered.length > 0)
            throw new Error(`a held write was answered before it waited: ${answered.join('; ')}`);
          return twoWaitingOnKafka();
        },
        30_000,
        'two writes waiting for Kafka',
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}; edge connections: ${await edgeStates()}`);
      });
      const refused = await push();
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body.error.code).toBe('service_unavailable');
      expect(refused.body.error.message).toMatch(/^Kafka is unavailable/);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      await kafka.resume();
      for (const res of await Promise.all(held)) expect([200, 503]).toContain(res.status);
      await eventually(async () => ((await push()).status === 200 ? true : undefined), 60_000, 'accepting again');

      // Now PostgreSQL holds them: a lock the import job inserts wait for.
      const locker = await suite.pool.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE import_jobs IN EXCLUSIVE MODE');
        const blocked = [push(), push()];
        await eventually(
          async () => {
            const { rows } = await suite.pool.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND application_name = 'connect-gateway-edge' AND wait_event_type = 'Lock'`,
            );
            return rows[0].n >= 2 ? true : undefined;
          },
          30_000,
          'two writes waiting for a lock',
        );
        const stalled = await push();
        expect(stalled.status, stalled.text).toBe(503);
        expect(stalled.body.error.message).toMatch(/^PostgreSQL is unavailable/);
        await locker.query('ROLLBACK');
        for (const res of await Promise.all(blocked)) expect(res.status).toBe(200);
      } finally {
        locker.release();
      }
    },
    scaled(240_000),
  );
});
