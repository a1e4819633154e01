import { describe, expect, it } from 'vitest';
import { createGatewayMetrics } from '../../src/gateway/ops/metrics.js';
import type { DependencyCheck } from '../../src/shared/dependency-check.js';
import { createWorkerRegistry } from '../../src/workers/ops/metrics.js';
import type { Readiness } from '../../src/workers/ops/readiness.js';
import { parseSamples, samplesOf, valueOf } from '../support/prometheus-text.js';

// The readings the alerts on a process not ready or a dependency down rely on
// (ops/prometheus/alerts.yml): taken at each scrape, one probe for both worker gauges.

const up: DependencyCheck = { status: 'Up', latencyMs: 1, error: null };
const down: DependencyCheck = { status: 'Down', latencyMs: 2000, error: 'postgres ping timed out after 2000 ms' };

describe('connect_dependency_up and worker_ready', () => {
  it('the gateway reports each dependency its checks probe, afresh at every scrape', async () => {
    const metrics = createGatewayMetrics();
    let postgres = up;
    metrics.watchDependencies(async () => ({ postgres, kafka: up }));
    let s = parseSamples(await metrics.registry.metrics());
    expect(valueOf(s, 'connect_dependency_up', { dependency: 'postgres' })).toBe(1);
    expect(valueOf(s, 'connect_dependency_up', { dependency: 'kafka' })).toBe(1);
    postgres = down;
    s = parseSamples(await metrics.registry.metrics());
    expect(valueOf(s, 'connect_dependency_up', { dependency: 'postgres' })).toBe(0);
    expect(valueOf(s, 'connect_dependency_up', { dependency: 'kafka' })).toBe(1);
  });

  it('a worker reports readiness and the dependencies it needs, from one probe per scrape', async () => {
    let probes = 0;
    let readiness: Readiness = { ready: false, state: 'starting', checks: { postgres: up } };
    const m = createWorkerRegistry(
      { consumers: [], webhooks: true },
      {
        readiness: async () => {
          probes++;
          return readiness;
        },
      },
    );
    let s = parseSamples(await m.registry.metrics());
    expect(probes).toBe(1);
    expect(valueOf(s, 'worker_ready')).toBe(0);
    expect(valueOf(s, 'connect_dependency_up', { dependency: 'postgres' })).toBe(1);
    expect(samplesOf(s, 'connect_dependency_up', { dependency: 'kafka' })).toEqual([]); // not needed here
    readiness = { ready: true, state: 'running', checks: { postgres: up, kafka: down } };
    s = parseSamples(await m.registry.metrics());
    expect(probes).toBe(2);
    expect(valueOf(s, 'worker_ready')).toBe(1);
    expect(valueOf(s, 'connect_dependency_up', { dependency: 'kafka' })).toBe(0);
  });

  it('is left out of a worker registry without a readiness source', async () => {
    const s = parseSamples(await createWorkerRegistry({ consumers: ['jobs'] }).registry.metrics());
    expect(samplesOf(s, 'worker_ready')).toEqual([]);
    expect(samplesOf(s, 'connect_dependency_up')).toEqual([]);
  });
});
