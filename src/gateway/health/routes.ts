import { serviceVersion } from '../../shared/version.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import type { CheckDependencies, DependencyChecks } from './checks.js';
import { integrationHealthSchema } from './schemas.js';

export const overallStatus = (c: DependencyChecks) =>
  c.postgres.status === 'Down' ? 'Unhealthy' : c.kafka.status === 'Down' ? 'Degraded' : 'Healthy';

export function healthRoutes(check: CheckDependencies): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/integration/health',
      operationId: 'getIntegrationHealth',
      summary: 'Integration health check',
      description:
        'Always 200 when the caller is authorised: the body reports the overall status and each dependency. ' +
        'Use /readyz (no key) for load-balancer readiness.',
      tag: 'Health',
      auth: 'apiKey',
      errorStatuses: [429],
      responses: { 200: { description: 'Health report', schema: integrationHealthSchema } },
      async handler() {
        const checks = await check();
        return {
          status: 200,
          body: { status: overallStatus(checks), version: serviceVersion, time: new Date().toISOString(), checks },
        };
      },
    }),
  ];
}
