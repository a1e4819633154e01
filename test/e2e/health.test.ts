import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../support/api-client.js';
import { bearer } from '../support/fixtures.js';
import { startTestGateway, testConfig } from '../support/gateway.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { startThrowawayKafka } from '../support/throwaway-kafka.js';

// This file stops and starts a broker of its own, never the shared one.
let kafka: Awaited<ReturnType<typeof startThrowawayKafka>>;
beforeAll(async () => {
  kafka = await startThrowawayKafka();
});
afterAll(() => kafka?.destroy());
const suite = useGatewaySuite({ env: () => ({ KAFKA_BROKERS: kafka.brokers, HEALTH_CHECK_TIMEOUT_MS: '1500' }) });

const health = async () => {
  const res = await suite.api.get('/api/v1/integration/health', {
    headers: bearer(suite.demo.clients['integration.health.read']!.apiKey),
  });
  expect(res.status).toBe(200);
  return res.body;
};

describe('health and readiness', () => {
  it('reports both dependencies up', async () => {
    const body = await health();
    expect(body.status).toBe('Healthy');
    expect(body.checks.postgres).toMatchObject({ status: 'Up', error: null });
    expect(body.checks.kafka).toMatchObject({ status: 'Up', error: null });
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(Math.abs(Date.parse(body.time) - Date.now())).toBeLessThan(60_000);
    const ready = await suite.api.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.ready).toBe(true);
    expect((await suite.api.get('/livez')).status).toBe(200);
  });

  it('reports a stopped Kafka, and recovers when it is back', async () => {
    await kafka.stop();
    const ready = await suite.api.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({
      ready: false,
      checks: { postgres: { status: 'Up' }, kafka: { status: 'Down' } },
    });
    expect(ready.body.checks.kafka.error).toEqual(expect.any(String));
    const body = await health();
    expect(body.status).toBe('Degraded');
    expect(body.checks.kafka.status).toBe('Down');
    expect((await suite.api.get('/livez')).status).toBe(200);

    await kafka.start();
    await eventually(
      async () => ((await suite.api.get('/readyz')).status === 200 ? true : undefined),
      60_000,
      'ready again',
    );
    expect((await health()).status).toBe('Healthy');
  });

  it('reports an unreachable PostgreSQL as not ready', async () => {
    const closed = await startTestGateway(
      testConfig('postgres://postgres@127.0.0.1:1/connect', { KAFKA_BROKERS: kafka.brokers }),
    );
    try {
      const client = await createApiClient(closed.url);
      const ready = await client.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.postgres.status).toBe('Down');
      // Authentication needs PostgreSQL: a keyed call is 503, not 401.
      const res = await client.get('/api/v1/integration/health', { headers: bearer(suite.demo.clients.all!.apiKey) });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.headers.get('retry-after')).toBe('5');
    } finally {
      await closed.stop();
    }
  });

  it('exposes Prometheus metrics by route and status', async () => {
    await suite.api.get('/api/v1/connect/inventory/items');
    const res = await suite.api.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.text).toMatch(
      /http_requests_total\{method="GET",route="\/api\/v1\/connect\/inventory\/items",status="401"\} [1-9]/,
    );
    expect(res.text).toContain('http_request_duration_seconds_bucket{');
    expect(res.text).toContain('# TYPE kafka_produce_errors_total counter');
  });

  it("shows the tenants' shares of the scoped pools: checkouts by outcome, connections held and waiting", async () => {
    expect(
      (await suite.api.get('/api/v1/import-jobs', { headers: bearer(suite.demo.clients.all!.apiKey) })).status,
    ).toBe(200);
    const res = await suite.api.get('/metrics');
    expect(res.text).toMatch(/db_tenant_checkouts_total\{pool="tenant",outcome="immediate"\} [1-9]/);
    expect(res.text).toContain('db_tenant_checkouts_total{pool="edge",outcome="queue_full"} 0');
    expect(res.text).toContain('db_tenant_connections{pool="tenant",state="waiting"} 0');
    expect(res.text).toContain('db_tenants_at_share{pool="tenant"} 0');
  });
});
