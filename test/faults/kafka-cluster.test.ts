import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel, ConfigResourceTypes } from 'kafkajs';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { createApiClient } from '../support/api-client.js';
import { bearer } from '../support/fixtures.js';
import { balanceOf, runUsageLoad, usageLedger } from '../support/materials.js';
import { spawnGateway, spawnWorkers } from '../support/processes.js';
import { startThrowawayCluster, type ThrowawayCluster } from '../support/throwaway-cluster.js';
import { eventually } from '../support/kafka.js';
import { scaled } from '../support/time-scale.js';
import { appliedAgain, coordinatorOf, healthyWriteFigures, leadersOf, stillLeads } from './failover-figures.js';
import { faultConfig, finishScenario, killAllFleets, startScenario, testPool, waitFor } from './harness.js';

// Issue 15: the service on a three-broker cluster reached the way managed clusters are
// (SASL_SSL with SCRAM, mutual TLS), topics replicated 3 with min.insync.replicas 2, two gateways
// and two workers per kind; a partition leader's broker SIGKILLed under load, then two brokers
// down at once. The oracle checks every acknowledged write against the database.
let cluster: ThrowawayCluster;
let db: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  const [c, d] = await Promise.allSettled([startThrowawayCluster(), createTestDatabase()]);
  if (c.status === 'fulfilled') cluster = c.value;
  if (d.status === 'fulfilled') db = d.value;
  if (c.status === 'rejected') throw c.reason;
  if (d.status === 'rejected') throw d.reason;
  pool = testPool(db.url);
}, scaled(400_000));

afterAll(async () => {
  await killAllFleets();
  await pool?.end();
  await db?.drop();
  await cluster?.destroy();
}, scaled(180_000));

const replicated = { KAFKA_TOPIC_REPLICATION_FACTOR: '3', KAFKA_TOPIC_MIN_INSYNC_REPLICAS: '2' };

/** The test's own view of the cluster: plaintext, no retries to speak of. */
function admin() {
  return new Kafka({
    clientId: 'cluster-test',
    brokers: cluster.plaintextBrokers.split(','),
    logLevel: logLevel.NOTHING,
  }).admin();
}

/** The node (1-3) leading most partitions of topic. */
async function busiestLeader(topic: string): Promise<number> {
  const a = admin();
  await a.connect();
  try {
    const { topics } = await a.fetchTopicMetadata({ topics: [topic] });
    const counts = new Map<number, number>();
    for (const p of topics[0]!.partitions) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
    return [...counts].sort((x, y) => y[1] - x[1])[0]![0];
  } finally {
    await a.disconnect();
  }
}

/** Whether every partition of topic has all three replicas in sync again. */
async function allInSync(topic: string): Promise<boolean> {
  const a = admin();
  await a.connect();
  try {
    const { topics } = await a.fetchTopicMetadata({ topics: [topic] });
    return topics[0]!.partitions.every((p) => p.isr.length === 3);
  } finally {
    await a.disconnect();
  }
}

/** Replicas per partition and min.insync.replicas of topic. */
async function replication(topic: string) {
  const a = admin();
  await a.connect();
  try {
    const { topics } = await a.fetchTopicMetadata({ topics: [topic] });
    const described = await a.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['min.insync.replicas'] }],
    });
    return {
      replicas: [...new Set(topics[0]!.partitions.map((p) => p.replicas.length))],
      minInsyncReplicas: described.resources[0]!.configEntries[0]!.configValue,
    };
  } finally {
    await a.disconnect();
  }
}

/**
 * An OAuth 2 token endpoint for the client credentials grant, issuing the unsigned tokens the
 * cluster's test validator accepts; counts the tokens it issued.
 */
async function startTokenEndpoint(clientId: string, clientSecret: string) {
  let issued = 0;
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const server: Server = createServer((req, res) => {
    const expected = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    req.resume();
    req.on('end', () => {
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      issued++;
      const now = Math.floor(Date.now() / 1000);
      const token = `${b64({ alg: 'none' })}.${b64({ sub: clientId, iat: now, exp: now + 3600 })}.`;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/token`,
    issued: () => issued,
    close: () => new Promise((r) => server.close(r)),
  };
}

/**
 * Material usages (one item at one location, some event ids sent twice) through one gateway, in
 * bursts (send). finish() waits for them and for the workers, then judges: an event answered 200
 * is booked exactly once; one answered only 503 left nothing behind; the balance is exact.
 */
async function materialsLoad(
  gatewayUrl: string,
  demo: {
    tenantId: string;
    clients: Record<string, { apiKey: string }>;
    workOrders: { workOrderId: number; externalWorkOrderId: string }[];
  },
) {
  const api = await createApiClient(gatewayUrl);
  const headers = bearer(demo.clients.all!.apiKey);
  const items = (await api.get('/api/v1/connect/inventory/items', { headers })).body as {
    sku: string;
    inventoryItemId: string;
    unitOfMeasure: string;
  }[];
  const locations = (await api.get('/api/v1/connect/inventory/locations', { headers })).body as {
    externalCode: string;
    inventoryLocationId: string;
  }[];
  const item = items.find((i) => i.sku === 'VALVE-BALL-12')!;
  const location = locations.find((l) => l.externalCode === 'WH-MAIN')!;
  const start = (await balanceOf(pool, item.inventoryItemId, location.inventoryLocationId))!;
  const runs: { prefix: string; load: ReturnType<typeof runUsageLoad> }[] = [];
  return {
    /** A burst of 300 usages (250 distinct event ids) from 10 clients, under its own id prefix. */
    send(prefix: string) {
      runs.push({
        prefix,
        load: runUsageLoad({
          api,
          pool,
          tenantId: demo.tenantId,
          workOrders: demo.workOrders,
          item,
          locationCode: 'WH-MAIN',
          prefix,
          total: 300,
          distinct: 250,
          clients: 10,
        }),
      });
    },
    async finish() {
      const answered = new Map<string, Set<number>>();
      const statuses: { eventId: string; status: number }[] = [];
      for (const run of runs) {
        for (const r of (await run.load).responses) {
          answered.set(r.eventId, (answered.get(r.eventId) ?? new Set()).add(r.status));
          statuses.push(r);
        }
      }
      const acknowledged = [...answered].filter(([, st]) => st.has(200)).map(([id]) => id);
      const ledger = await eventually(
        async () => {
          const rows = (await Promise.all(runs.map((r) => usageLedger(pool, demo.tenantId, r.prefix)))).flat();
          const applied = rows.filter((r) => r.status === 'Applied').length;
          return applied >= acknowledged.length ? rows : undefined;
        },
        180_000,
        'acknowledged usages applied',
      );
      const byId = new Map(ledger.map((r) => [r.external_event_id, r]));
      const quantity = (id: string) => ((Number(id.slice(id.lastIndexOf('-') + 1)) % 9) + 1) / 8;
      const refused = [...answered].filter(([, st]) => !st.has(200)).length;
      console.log(
        `faults[cluster-leader-kill]: material usages ${answered.size} events in ${runs.length} bursts of 10 clients: ${acknowledged.length} acknowledged, ${refused} answered only 503 or 429 (${statuses.filter((r) => r.status === 429).length} × 429)`,
      );
      return {
        acknowledged: acknowledged.length,
        // 429: the tenant's share of the edge pool full past its queue's wait (ten clients' bursts
        // beside the load's writes, on a loaded machine): nothing done, retried after Retry-After.
        otherStatuses: statuses
          .filter((r) => r.status !== 200 && r.status !== 503 && r.status !== 429)
          .map((r) => `${r.eventId} ${r.status}`),
        notBookedOnce: acknowledged.filter((id) => byId.get(id)?.status !== 'Applied' || byId.get(id)?.movements !== 1),
        refusedButStored: [...answered].filter(([id, st]) => !st.has(200) && byId.has(id)).map(([id]) => id),
        balance: await balanceOf(pool, item.inventoryItemId, location.inventoryLocationId),
        expectedBalance: start - acknowledged.reduce((sum, id) => sum + quantity(id), 0),
      };
    },
  };
}

function expectNothingLost(report: Awaited<ReturnType<typeof finishScenario>>) {
  expect.soft(report.unexpectedExits, 'processes that exited on their own (or not 0 on SIGTERM)').toEqual([]);
  expect.soft(report.converged, 'every import job and job request settled').toBe(true);
  expect.soft(report.oracle).toEqual(report.expected);
  expect.soft(report.counts.otherNon2xx, `statuses other than 2xx/503/429: ${report.counts.otherStatuses}`).toBe(0);
  expect.soft(report.counts.timeouts, 'requests unanswered after 30 s').toBe(0);
  expect.soft(report.counts.write503WithoutRetryAfter, '503 writes without Retry-After').toBe(0);
}

describe('a three-broker cluster over SASL_SSL and mutual TLS', () => {
  it(
    'creates replicated topics; a leader broker SIGKILLed under load loses nothing, and two gateways and workers go on',
    async () => {
      // Gateways over SASL_SSL (SCRAM-SHA-512), workers over mutual TLS.
      const s = await startScenario({
        name: 'cluster-leader-kill',
        pool,
        databaseUrl: db.url,
        brokers: cluster.scramEnv.KAFKA_BROKERS,
        workers: {},
        env: { ...cluster.scramEnv, ...replicated },
        // Lanes enough that some write to a live leader's partition at any time.
        load: { writeLanes: 6 },
        startLoad: false,
      });
      await Promise.all([
        s.fleet.gateway('gateway-2'),
        s.fleet.workers('workers-1', 'inbound,inbound-express,jobs,materials', cluster.mtlsEnv),
        s.fleet.workers('workers-2', 'inbound,inbound-express,jobs,materials', cluster.mtlsEnv),
      ]);
      const { load } = s;
      load.start();
      const warm = await load.waitForAcks(30, 0, 120_000);
      const materials = await materialsLoad(s.fleet.url()!, s.demo);
      // One burst as the broker dies (it may be refused whole while the gateway holds Kafka for
      // down), one once it is back (acknowledged): each usage booked once or not at all.
      materials.send('cluster-usage-during');

      const inbound = `${s.config.kafka.topicPrefix}inbound.targets`;
      const topicReplication = await replication(inbound);
      const dlqReplication = await replication(`${inbound}.dlq`);
      const leader = await busiestLeader(inbound);
      const writeTopics = { inbound: [inbound, `${inbound}.express`], jobs: `${s.config.kafka.topicPrefix}jobs` };
      const leaders = await leadersOf(cluster.plaintextBrokers, [...writeTopics.inbound, writeTopics.jobs]);

      const fault = load.faultStart();
      await cluster.kill(leader);
      load.markDown();
      materials.send('cluster-usage-kill');
      // Until Kafka fences the dead broker and elects new leaders for its partitions (seconds).
      const moved = await waitFor(
        async () => !(await stillLeads(cluster.plaintextBrokers, [...writeTopics.inbound, writeTopics.jobs], leader)),
        120_000,
      );
      const healthyWrites = healthyWriteFigures(
        load,
        { killed: fault.down!, until: Date.now() },
        writeTopics,
        leaders,
        leader,
      );
      // Other brokers take over its partitions: writes are acknowledged again while it is away.
      const servedWithoutIt = await load.waitForAcks(20, fault.down!, 180_000);
      // The load feeds inbound and jobs throughout; material usages are sent in bursts, and one sent
      // while its partition's leader was dead is answered 503 (nothing to apply: 'no writes').
      const resumed = await waitFor(async () => {
        const { inbound, jobs, materials } = await appliedAgain(pool, s.demo.tenantId, fault.down!);
        return typeof inbound === 'number' && typeof jobs === 'number' && materials !== null;
      }, 120_000);
      const applied = await appliedAgain(pool, s.demo.tenantId, fault.down!);
      console.log(
        `faults[cluster-leader-kill]: broker ${leader} SIGKILLed: ${healthyWrites.line}; ` +
          `seconds until each kind applied a write acknowledged after the kill: ${JSON.stringify(applied)}`,
      );
      load.markUp();
      await cluster.start(leader);
      load.faultEnd();
      const recovered = await load.waitForAcks(20, fault.end!, 180_000);
      materials.send('cluster-usage-after');
      // The restarted broker catches up: back in every partition's in-sync replicas.
      const caughtUp = await waitFor(() => allInSync(inbound), 180_000);
      const usages = await materials.finish();
      const report = await finishScenario(s);

      expect.soft(warm, 'writes acknowledged before the fault').toBe(true);
      expect.soft(usages.otherStatuses, 'material usages answered other than 200/503/429').toEqual([]);
      expect.soft(usages.acknowledged, 'material usages acknowledged').toBeGreaterThan(0);
      expect.soft(usages.notBookedOnce, 'acknowledged usages not Applied with exactly one stock movement').toEqual([]);
      expect.soft(usages.refusedButStored, 'usages answered only 503 yet stored').toEqual([]);
      expect.soft(usages.balance, 'stock balance after the acknowledged usages').toBe(usages.expectedBalance);
      expect.soft(topicReplication, `replication of ${inbound}`).toEqual({ replicas: [3], minInsyncReplicas: '2' });
      expect.soft(dlqReplication, `replication of ${inbound}.dlq`).toEqual({ replicas: [3], minInsyncReplicas: '2' });
      expect.soft(servedWithoutIt, `writes acknowledged with broker ${leader} SIGKILLed`).toBe(true);
      expect.soft(moved, `broker ${leader}'s partitions got new leaders`).toBe(true);
      // Writes to partitions of live leaders wait as long as the lost ones: with acks=all the dead
      // broker holds every partition it replicates until the cluster fences it, whatever the client
      // (npm run bench:failover). The figure is printed above (failover-figures.ts), not asserted.
      expect.soft(resumed, `every worker kind applied again after the kill: ${JSON.stringify(applied)}`).toBe(true);
      expect.soft(recovered, 'writes acknowledged after it came back').toBe(true);
      expect.soft(caughtUp, `broker ${leader} back in the in-sync replicas of every partition`).toBe(true);
      expectNothingLost(report);
    },
    scaled(900_000),
  );

  it(
    'the coordinator broker of a consumer group SIGKILLed: every worker kind applies again, nothing lost',
    async () => {
      const s = await startScenario({
        name: 'cluster-coordinator-kill',
        pool,
        databaseUrl: db.url,
        brokers: cluster.scramEnv.KAFKA_BROKERS,
        workers: {},
        env: { ...cluster.scramEnv, ...replicated },
        startLoad: false,
      });
      await s.fleet.workers('workers-1', 'inbound,inbound-express,jobs,materials', cluster.mtlsEnv);
      const { load } = s;
      load.start();
      const warm = await load.waitForAcks(30, 0, 120_000);
      // The group the load feeds without pause (its writes keep coming while the broker is away).
      const groupId = `${s.config.kafka.topicPrefix}jobs`;
      const coordinator = await coordinatorOf(cluster.plaintextBrokers, groupId);

      const fault = load.faultStart();
      await cluster.kill(coordinator);
      load.markDown();
      const fedKinds = async () => {
        const { inbound, jobs } = await appliedAgain(pool, s.demo.tenantId, fault.down!);
        return { inbound, jobs };
      };
      // Applied again: something each kind was handed after the kill is applied.
      const resumed = await waitFor(
        async () => Object.values(await fedKinds()).every((v) => typeof v === 'number'),
        60_000,
      );
      const applied = await fedKinds();
      console.log(
        `faults[cluster-coordinator-kill]: broker ${coordinator} (coordinator of ${groupId}) SIGKILLed; ` +
          `seconds until each kind applied a write acknowledged after the kill: ${JSON.stringify(applied)}`,
      );
      load.markUp();
      await cluster.start(coordinator);
      load.faultEnd();
      const recovered = await load.waitForAcks(20, fault.end!, 180_000);
      const report = await finishScenario(s);

      expect.soft(warm, 'writes acknowledged before the fault').toBe(true);
      expect.soft(resumed, `every worker kind applied again after the kill: ${JSON.stringify(applied)}`).toBe(true);
      expect.soft(recovered, 'writes acknowledged after it came back').toBe(true);
      expectNothingLost(report);
    },
    scaled(900_000),
  );

  it(
    'two brokers down: writes answer 503 with Retry-After, reads keep working, nothing acknowledged is lost',
    async () => {
      const s = await startScenario({
        name: 'cluster-two-down',
        pool,
        databaseUrl: db.url,
        brokers: cluster.scramEnv.KAFKA_BROKERS,
        workers: { workers: 'inbound,inbound-express,jobs' },
        env: { ...cluster.scramEnv, ...replicated },
      });
      const { load } = s;
      const warm = await load.waitForAcks(20, 0, 120_000);

      const fault = load.faultStart();
      await Promise.all([cluster.kill(2), cluster.kill(3)]);
      load.markDown();
      await waitFor(
        () =>
          Date.now() - fault.down! >= 8000 &&
          load.writeAttempts(fault.down!).filter((a) => a.outcome === 503).length >= 5,
        120_000,
      );
      load.markUp();
      await Promise.all([cluster.start(2), cluster.start(3)]);
      load.faultEnd();
      const recovered = await load.waitForAcks(20, fault.end!, 240_000);
      const report = await finishScenario(s);

      const readsDuring = load.reads.filter(
        (r) => r.kind !== 'health' && r.attempt.start >= fault.down! && r.attempt.end <= fault.up!,
      );
      expect.soft(warm, 'writes acknowledged before the fault').toBe(true);
      expect.soft(recovered, 'writes acknowledged after the brokers came back').toBe(true);
      expect.soft(readsDuring.length, 'reads while two brokers were down').toBeGreaterThan(0);
      expect
        .soft(
          readsDuring.filter((r) => r.attempt.outcome !== 200).map((r) => `${r.kind} ${r.attempt.outcome}`),
          'reads while two brokers are down (200 expected)',
        )
        .toEqual([]);
      expectNothingLost(report);
    },
    scaled(900_000),
  );

  it(
    'OAUTHBEARER: a gateway takes its token from an OAuth 2 token endpoint (client credentials) and writes go through',
    async () => {
      const tokens = await startTokenEndpoint('connect-gateway', 'token-secret');
      const oauth = {
        ...cluster.scramEnv,
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_USERNAME: '',
        KAFKA_SASL_PASSWORD: '',
        KAFKA_SASL_OAUTHBEARER_TOKEN_URL: tokens.url,
        KAFKA_SASL_OAUTHBEARER_CLIENT_ID: 'connect-gateway',
        KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'token-secret',
      };
      try {
        const s = await startScenario({
          name: 'cluster-oauthbearer',
          pool,
          databaseUrl: db.url,
          brokers: oauth.KAFKA_BROKERS,
          workers: {},
          env: { ...oauth, ...replicated },
          startLoad: false,
        });
        await s.fleet.workers('workers', 'inbound,inbound-express,jobs', cluster.mtlsEnv);
        s.load.start();
        const acked = await s.load.waitForAcks(10, 0, 120_000);
        const report = await finishScenario(s);
        // A wrong client secret: the token endpoint refuses, and so the process stops.
        const refused = spawnGateway(faultConfig(db.url, oauth.KAFKA_BROKERS, oauth), {
          ...oauth,
          KAFKA_SASL_OAUTHBEARER_CLIENT_SECRET: 'not-the-secret',
        });
        const exit = await refused.exited;

        expect.soft(acked, 'writes acknowledged through the OAUTHBEARER gateway').toBe(true);
        expect.soft(tokens.issued(), 'tokens issued').toBeGreaterThan(0);
        expectNothingLost(report);
        expect(exit.code).toBe(1);
        expect(refused.output()).toMatch(/gateway: failed to start: Kafka .* refused this process: .*401/);
      } finally {
        await tokens.close();
      }
    },
    scaled(600_000),
  );

  it(
    'refused credentials or an untrusted certificate stop a process at start with one clear line',
    async () => {
      const config = faultConfig(db.url, cluster.scramEnv.KAFKA_BROKERS, cluster.scramEnv);
      const wrongPassword = spawnGateway(config, { ...cluster.scramEnv, KAFKA_SASL_PASSWORD: 'not-the-password' });
      const untrusted = spawnWorkers(config, 'inbound,inbound-express', {
        ...cluster.mtlsEnv,
        KAFKA_SSL_CA_FILE: '/etc/ssl/certs/ca-certificates.crt', // the system CAs: not the cluster's
      });
      const noClientCertificate = spawnWorkers(config, 'jobs', {
        ...cluster.mtlsEnv,
        KAFKA_SSL_CERT_FILE: '',
        KAFKA_SSL_KEY_FILE: '',
      });
      const exits = await Promise.all([wrongPassword, untrusted, noClientCertificate].map((p) => p.exited));
      const lines = [wrongPassword, untrusted, noClientCertificate].map((p) =>
        p
          .output()
          .split('\n')
          .filter((l) => l.includes('failed to start')),
      );
      expect(exits.map((e) => e.code)).toEqual([1, 1, 1]);
      expect(lines[0]!.join('\n')).toMatch(
        /gateway: failed to start: Kafka .* refused this process: SASL authentication refused/,
      );
      expect(lines[1]!.join('\n')).toMatch(/workers: failed to start: Kafka .* refused this process: TLS refused/);
      expect(lines[2]!.join('\n')).toMatch(/workers: failed to start: Kafka .* refused this process: TLS refused/);
    },
    scaled(300_000),
  );
});
