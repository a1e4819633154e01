import { Gauge, type Registry } from 'prom-client';
import type { DependencyCheck } from './dependency-check.js';

/** The dependencies a process probes (as its /readyz reports them); a missing one is not needed there. */
export type DependencyReport = Partial<Record<'postgres' | 'kafka', DependencyCheck>>;

/**
 * `connect_dependency_up{dependency}`: 1 when the process's own probe of PostgreSQL or Kafka (the
 * /readyz probe, bounded by HEALTH_CHECK_TIMEOUT_MS) answered at this scrape, else 0. Gateway and
 * workers both expose it, so one alert covers every process (ops/prometheus/alerts.yml).
 */
export function registerDependencyGauge(registry: Registry, read: () => Promise<DependencyReport>): void {
  const up: Gauge<'dependency'> = new Gauge({
    name: 'connect_dependency_up',
    help: 'Whether this process reached a dependency (postgres, kafka) at scrape time: 1 up, 0 down',
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      const report = await read();
      up.reset();
      for (const [dependency, check] of Object.entries(report))
        if (check) up.set({ dependency }, check.status === 'Up' ? 1 : 0);
    },
  });
}
