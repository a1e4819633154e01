import { z } from 'zod';
import { jobStatuses } from '../../shared/jobs/job.js';

// Exactly the fields of spec part 2.
export const createJobResponseSchema = z
  .strictObject({
    requestId: z.string().nullable().meta({ description: "This request's id (also in X-Request-Id)." }),
    correlationId: z.string().nullable().meta({ description: 'X-Correlation-Id as sent, or generated.' }),
    externalId: z.string().nullable(),
    fieldJobId: z.uuid(),
    jobNumber: z.string().nullable().meta({
      description: 'Per tenant, unique and increasing (not gapless: a refused creation may skip one), e.g. J-000123.',
    }),
    status: z
      .string()
      .nullable()
      .meta({ description: `One of ${jobStatuses.join(', ')}; Created right after creation.` }),
    created: z.boolean().meta({ description: 'True on the request that created the job (201).' }),
    idempotentReplay: z.boolean().meta({ description: 'True when this answers a retry of an earlier request (200).' }),
  })
  .meta({ id: 'ConnectCreateJobResponse' });
