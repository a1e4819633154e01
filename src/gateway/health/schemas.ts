import { z } from 'zod';

const dependencyCheckSchema = z
  .strictObject({
    status: z.enum(['Up', 'Down']),
    latencyMs: z.number().int().min(0).meta({ description: 'How long the probe took.' }),
    error: z.string().nullable().meta({
      description: 'Why the probe failed (for PostgreSQL also "read-only" when it does not accept writes), or null.',
    }),
  })
  .meta({ id: 'DependencyCheckDto' });

export const integrationHealthSchema = z
  .strictObject({
    status: z.enum(['Healthy', 'Degraded', 'Unhealthy']).meta({
      description:
        'Healthy: PostgreSQL and Kafka answer. Degraded: PostgreSQL answers, Kafka does not (reads work, ' +
        'writes that go through Kafka answer 503). Unhealthy: PostgreSQL does not answer, or answers read-only ' +
        '(a standby, or an old primary during a failover: writes answer 503; checks.postgres.error says "read-only").',
    }),
    version: z.string().meta({ description: 'Service version.' }),
    time: z.iso.datetime().meta({ description: 'Server time of the check (ISO 8601 UTC).' }),
    checks: z.strictObject({ postgres: dependencyCheckSchema, kafka: dependencyCheckSchema }),
  })
  .meta({ id: 'IntegrationHealthDto' });
