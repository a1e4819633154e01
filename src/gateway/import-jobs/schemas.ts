import { z } from 'zod';
import { pageSizeQuery } from '../../shared/common-schemas.js';
import { pageCursor } from '../../shared/page-cursor.js';
import { importJobStatuses, maxStoredItemErrors } from '../../shared/inbound/import-job.js';

export const importJobStatusSchema = z.enum(importJobStatuses).meta({
  id: 'ImportJobStatus',
  description:
    'Queued: recorded and handed to the workers. Processing: a worker applied the first chunk. ' +
    'Completed: every target applied. CompletedWithErrors: done, but some targets were rejected at the edge ' +
    'or failed in the worker (see errors). Failed: done and nothing applied (see failureReason). ' +
    'The last three are final.',
});

export const itemErrorSchema = z
  .strictObject({
    index: z.number().int().min(0).meta({ description: 'Index of the target in the request (0 for a single target).' }),
    externalId: z.string().nullable(),
    field: z.string().nullable().meta({
      description:
        'Field path within the target, e.g. address.city (NUL and unpaired surrogates in names written as \\u0000, \\ud800 escapes).',
    }),
    message: z.string(),
  })
  .meta({ id: 'ImportItemError' });

const int = () => z.number().int().min(0);

export const importJobSchema = z
  .strictObject({
    importJobId: z.number().int().min(1).meta({ format: 'int64' }),
    kind: z.enum(['Single', 'Batch']),
    status: importJobStatusSchema,
    sourceSystem: z.string(),
    externalBatchId: z.string().nullable(),
    counts: z
      .strictObject({
        received: int().meta({ description: 'Targets in the request.' }),
        accepted: int().meta({ description: 'Targets that passed validation and were queued.' }),
        rejected: int().meta({ description: 'Targets refused at the edge (see errors).' }),
        applied: int().meta({ description: 'Accepted targets written by the workers.' }),
        failed: int().meta({ description: 'Accepted targets the workers could not write after retries.' }),
      })
      .meta({ id: 'ImportJobCounts' }),
    errors: z
      .array(itemErrorSchema)
      .max(maxStoredItemErrors)
      .meta({ description: `The first ${maxStoredItemErrors} item errors.` }),
    errorsOmitted: int().meta({ description: 'Item errors beyond those listed.' }),
    failureReason: z.string().nullable(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    startedAt: z.iso.datetime().nullable(),
    completedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'ImportJob' });

export type ImportJobDto = z.infer<typeof importJobSchema>;

/** Deepest offset page (skip); deeper pages follow nextCursor, whose cost does not grow with depth. */
export const maxImportJobsSkip = 10_000;
/** The most matching jobs a list counts for `total`: counting a whole year of history per page would cost more than the page. */
export const importJobsTotalLimit = 10_000;

export const importJobsCursor = pageCursor('import-jobs');

export const importJobListSchema = z
  .strictObject({
    items: z.array(importJobSchema),
    total: int().meta({
      description:
        `Jobs matching the filters, counted up to ${importJobsTotalLimit}: when more match, this is ${importJobsTotalLimit} ` +
        'and totalIsExact is false. Counted on each request (not kept), at most that many rows read.',
    }),
    totalIsExact: z
      .boolean()
      .meta({ description: `false when more than ${importJobsTotalLimit} jobs match (total is then a lower bound).` }),
    skip: int(),
    take: int(),
    nextCursor: z
      .string()
      .nullable()
      .meta({
        description:
          'Pass as `cursor` (with the same filters and take) for the page after this one, however deep: its cost does not ' +
          'grow with depth, and jobs created meanwhile never shift it. null: this is the last page.',
      }),
  })
  .meta({ id: 'ImportJobList' });

export const importJobIdParamsSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[1-9]\d{0,18}$/, 'must be a positive integer (int64)')
    .refine((v) => v.length < 19 || v <= '9223372036854775807', { message: 'must be a positive integer (int64)' })
    .meta({ override: { type: 'integer', format: 'int64', minimum: 1 } }),
});

export const listImportJobsQuery = (maxTake: number) =>
  z
    .strictObject({
      status: importJobStatusSchema.optional(),
      sourceSystem: z.string().min(1).max(100).optional(),
      skip: z.coerce
        .number()
        .int()
        .min(0)
        .max(
          maxImportJobsSkip,
          `must be at most ${maxImportJobsSkip}; page deeper with cursor (each page's nextCursor)`,
        )
        .default(0)
        .meta({
          description: `Jobs to pass over, 0 … ${maxImportJobsSkip}; deeper pages: follow nextCursor. Not with cursor.`,
        }),
      take: pageSizeQuery(maxTake, 50),
      cursor: importJobsCursor.query(),
    })
    .refine((q) => q.cursor === undefined || q.skip === 0, {
      path: ['skip'],
      message: 'cannot be combined with cursor (the cursor says where the page starts)',
    });
