import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { createWorkerRegistry } from '../../src/workers/ops/metrics.js';
import { createReadiness, type WorkersState } from '../../src/workers/ops/readiness.js';
import { startOpsServer, urlOf, type OpsServer } from '../../src/workers/ops/server.js';
import { parseSamples, valueOf } from '../support/prometheus-text.js';

const logger = createLogger('silent', 'unit');
let server: OpsServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('worker HTTP configuration', () => {
  it('listens on 0.0.0.0:9464 unless told otherwise; 0 means any free port', () => {
    expect(loadConfig({}).workers).toMatchObject({ httpHost: '0.0.0.0', httpPort: 9464 });
    expect(loadConfig({ WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0' }).workers).toMatchObject({
      httpHost: '127.0.0.1',
      httpPort: 0,
    });
    expect(() => loadConfig({ WORKER_HTTP_PORT: '65536' })).toThrow(/^invalid configuration: WORKER_HTTP_PORT="65536"/);
    expect(() => loadConfig({ WORKER_HTTP_PORT: 'metrics' })).toThrow(/WORKER_HTTP_PORT/);
  });
});

describe('worker readiness', () => {
  const up = async () => undefined;
  const down = async () => {
    throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
  };

  it('is ready only once the hosted kinds run and PostgreSQL and the broker answer', async () => {
    let state: WorkersState = 'starting';
    const readiness = createReadiness({ postgres: up, kafka: up, state: () => state });
    expect(await readiness()).toMatchObject({ ready: false, state: 'starting' });
    state = 'running';
    const ready = await readiness();
    expect(ready).toMatchObject({ ready: true, checks: { postgres: { status: 'Up' }, kafka: { status: 'Up' } } });
    state = 'stopping';
    expect((await readiness()).ready).toBe(false);
  });

  it('names the dependency that does not answer', async () => {
    const noDb = await createReadiness({ postgres: down, kafka: up, state: () => 'running' })();
    expect(noDb).toMatchObject({
      ready: false,
      checks: { postgres: { status: 'Down', error: 'connect ECONNREFUSED 127.0.0.1:5432' } },
    });
    const noBroker = await createReadiness({ postgres: up, kafka: down, state: () => 'running' })();
    expect(noBroker).toMatchObject({ ready: false, checks: { kafka: { status: 'Down' } } });
  });

  it('does not ask for the broker in a process without consumer groups (the webhook dispatcher)', async () => {
    const report = await createReadiness({ postgres: up, state: () => 'running' })();
    expect(report).toEqual({ ready: true, state: 'running', checks: { postgres: expect.any(Object) } });
  });
});

describe('worker HTTP server', () => {
  it('serves /livez, /readyz (200 or 503) and /metrics on an ephemeral port', async () => {
    const metrics = createWorkerRegistry({ consumers: ['inbound'] });
    metrics.messages('inbound', 'applied', 2);
    let ready = false;
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: metrics.registry,
      readiness: async () => ({ ready, state: ready ? 'running' : 'starting', checks: {} as never }),
      logger,
    });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toMatch(/:0$/);

    const live = await fetch(`${server.url}/livez`);
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ status: 'ok' });

    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    ready = true;
    const readyRes = await fetch(`${server.url}/readyz?verbose=1`);
    expect(readyRes.status).toBe(200);
    expect(await readyRes.json()).toMatchObject({ ready: true });

    const scrape = await fetch(`${server.url}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toContain('text/plain');
    expect(valueOf(parseSamples(await scrape.text()), 'worker_messages_total', { outcome: 'applied' })).toBe(2);

    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
    expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('answers 500 when a handler fails, and goes on serving', async () => {
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: createWorkerRegistry({ consumers: [] }).registry,
      readiness: () => Promise.reject(new Error('boom')),
      logger,
    });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(500);
    expect((await fetch(`${server.url}/livez`)).status).toBe(200);
  });

  it('fails to start on a port that is taken', async () => {
    server = await startOpsServer({
      host: '127.0.0.1',
      port: 0,
      registry: createWorkerRegistry({ consumers: [] }).registry,
      readiness: async () => ({ ready: true, state: 'running', checks: {} as never }),
      logger,
    });
    const port = Number(new URL(server.url).port);
    await expect(
      startOpsServer({
        host: '127.0.0.1',
        port,
        registry: createWorkerRegistry({ consumers: [] }).registry,
        readiness: async () => ({ ready: true, state: 'running', checks: {} as never }),
        logger,
      }),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });

  it('prints a reachable URL for wildcard and IPv6 addresses', () => {
    expect(urlOf('0.0.0.0', 9464)).toBe('http://127.0.0.1:9464');
    expect(urlOf('::', 9464)).toBe('http://[::1]:9464');
    expect(urlOf('10.0.0.5', 80)).toBe('http://10.0.0.5:80');
  });
});
