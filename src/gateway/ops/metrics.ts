import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { registerDependencyGauge, type DependencyReport } from '../../shared/dependency-gauge.js';
import { lingeringConnections, lingeringWaitingForRoom } from '../http/lingering-close.js';

export type GatewayMetrics = {
  registry: Registry;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  kafkaProduceError(topic: string): void;
  /** The event feed's LISTEN connection was lost and is being replaced (shared/db/listener.ts). */
  listenConnectionLost(reason: 'error' | 'end' | 'check'): void;
  /** Reads the dependencies at every scrape (connect_dependency_up); called once, where the checks are built. */
  watchDependencies(read: () => Promise<DependencyReport>): void;
};

/** A registry per process (not prom-client's global one), so tests can build several. */
export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const produceErrors = new Counter({
    name: 'kafka_produce_errors_total',
    help: 'Kafka produce calls that failed, by topic',
    labelNames: ['topic'] as const,
    registers: [registry],
  });
  const listenLost = new Counter({
    name: 'event_feed_listen_connections_lost_total',
    help: "The event feed's LISTEN connections lost and replaced, by reason: error, end (the server ended it), check (no longer on a writable server, or no answer); waiting long-polls re-read once it is back",
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of ['error', 'end', 'check']) listenLost.inc({ reason }, 0);
  new Gauge({
    name: 'http_lingering_connections',
    help:
      'Connections in a lingering close after a refusal (reading and discarding the rest of a body), ' +
      "by state: discarding, or waiting_for_room in the sender's upload quota",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const waiting = lingeringWaitingForRoom();
      this.set({ state: 'waiting_for_room' }, waiting);
      this.set({ state: 'discarding' }, Math.max(0, lingeringConnections() - waiting));
    },
  });
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
    },
    kafkaProduceError(topic) {
      produceErrors.inc({ topic });
    },
    listenConnectionLost(reason) {
      listenLost.inc({ reason });
    },
    watchDependencies(read) {
      registerDependencyGauge(registry, read);
    },
  };
}
