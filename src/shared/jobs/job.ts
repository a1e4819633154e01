import { z } from 'zod';
import { addressSchema, coordinatesSchema, instantSchema, metadataSchema, text } from '../common-schemas.js';

// Field job statuses. Created: recorded and being materialised (the state right after
// creation). Failed: could not be materialised after retries (dead-lettered; see the logs).
// The others belong to dispatch, outside this interface: Scheduled, Dispatched, InProgress,
// Completed, Cancelled.
export const jobStatuses = [
  'Created',
  'Failed',
  'Scheduled',
  'Dispatched',
  'InProgress',
  'Completed',
  'Cancelled',
] as const;
export const jobPriorities = ['Low', 'Normal', 'High', 'Urgent'] as const;

/** The job-creation request: everything the caller knows about the work to be done. */
export const createJobRequestSchema = z
  .strictObject({
    externalId: text(100).meta({ description: "The caller's id of the job; unique per tenant." }),
    title: text(200),
    description: z.string().max(4000).nullish(),
    jobType: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,50}$/, '1–50 letters, digits, _ . -')
      .meta({ description: 'A job type code of the tenant (e.g. MAINTENANCE); an unknown one is a 422.' }),
    priority: z.enum(jobPriorities).nullish().meta({ description: 'Default Normal.' }),
    customer: z
      .strictObject({
        name: text(200),
        externalId: text(100).nullish(),
        contact: z
          .strictObject({
            name: text(200).nullish(),
            phone: z
              .string()
              .regex(/^\+?[0-9 ()/-]{3,30}$/, 'digits, spaces, ( ) / - and an optional leading +')
              .nullish(),
            email: z.email().max(254).nullish(),
          })
          .nullish(),
      })
      .meta({ id: 'JobCustomer' }),
    site: z.strictObject({ address: addressSchema, coordinates: coordinatesSchema.nullish() }).meta({ id: 'JobSite' }),
    requestedTimeWindow: z
      .strictObject({ start: instantSchema(), end: instantSchema() })
      .nullish()
      .meta({ description: 'When the work should happen; end after start and not in the past (else 422).' }),
    expectedDurationMinutes: z.number().int().min(1).max(1440).nullish(),
    importTargetRef: z
      .strictObject({ sourceSystem: text(100), externalId: text(100) })
      .nullish()
      .meta({ description: 'An earlier inbound target of the tenant this job serves; an unknown one is a 422.' }),
    metadata: metadataSchema.nullish(),
  })
  .meta({ id: 'ConnectCreateJobRequest' });

export type CreateJobRequest = z.infer<typeof createJobRequestSchema>;
