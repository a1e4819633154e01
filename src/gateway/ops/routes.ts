import { z } from 'zod';
import { serviceVersion } from '../../shared/version.js';
import type { CheckDependencies } from '../health/checks.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import type { GatewayMetrics } from './metrics.js';

const livenessSchema = z.strictObject({ status: z.literal('ok'), version: z.string() }).meta({ id: 'LivenessDto' });
const dependencySchema = z.strictObject({
  status: z.enum(['Up', 'Down']),
  latencyMs: z.number().int(),
  error: z.string().nullable(),
});
const readinessSchema = z
  .strictObject({
    ready: z.boolean(),
    checks: z.strictObject({ postgres: dependencySchema, kafka: dependencySchema }),
  })
  .meta({ id: 'ReadinessDto' });

export type OpsDeps = {
  check: CheckDependencies;
  metrics: GatewayMetrics;
  openApiDocument: () => unknown;
  /** False once shutdown has begun, so load balancers drain this replica. */
  accepting: () => boolean;
};

/** Operational endpoints outside the integration interface: no key, no rate limit. */
export function opsRoutes(deps: OpsDeps): RouteDefinition[] {
  let openApiText: string | undefined;
  return [
    defineRoute({
      method: 'get',
      path: '/livez',
      operationId: 'getLiveness',
      summary: 'Liveness: the process runs and serves HTTP',
      description:
        '200 whenever the event loop serves; no dependency is checked, so an outage of PostgreSQL or Kafka never ' +
        'fails it. Use it as the liveness probe and /readyz as the readiness probe.',
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'Alive', schema: livenessSchema } },
      handler: async () => ({ status: 200, body: { status: 'ok', version: serviceVersion } }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Readiness: PostgreSQL accepts writes and Kafka answers',
      description:
        '200 with ready=true when both dependencies answer, else 503 with ready=false (also while shutting down). ' +
        'PostgreSQL counts only when it accepts writes: a read-only server (a standby, or an old primary still ' +
        'reachable after a failover) is Down, its error saying "read-only".',
      tag: 'Operations',
      auth: 'none',
      responses: {
        200: { description: 'Ready', schema: readinessSchema },
        503: { description: 'Not ready', schema: readinessSchema },
      },
      async handler() {
        const checks = await deps.check();
        const ready = deps.accepting() && checks.postgres.status === 'Up' && checks.kafka.status === 'Up';
        return { status: ready ? 200 : 503, body: { ready, checks } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/metrics',
      operationId: 'getMetrics',
      summary: 'Prometheus metrics (text exposition format)',
      description:
        'http_requests_total and http_request_duration_seconds by method, route template and status; ' +
        'kafka_produce_errors_total by topic; Node.js process metrics.',
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'Prometheus text', schema: z.string() } },
      responseMediaTypes: ['text/plain'],
      handler: async () => ({
        status: 200,
        body: await deps.metrics.registry.metrics(),
        headers: { 'Content-Type': deps.metrics.registry.contentType },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      description:
        'The document describing every operation, body, status, error code and limit of this gateway, as configured ' +
        '(limits reflect its settings). Generate clients from it.',
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'OpenAPI document', schema: z.record(z.string(), z.unknown()) } },
      responseMediaTypes: ['application/json'],
      // Served without credentials, so without a rate limit: its text (about 380 KB) is made once,
      // not per request.
      handler: async () => ({
        status: 200,
        body: (openApiText ??= JSON.stringify(deps.openApiDocument())),
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
      }),
    }),
  ];
}
