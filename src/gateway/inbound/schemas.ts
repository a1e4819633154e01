import { z } from 'zod';
import { sourceSystemSchema, targetItemSchema } from '../../shared/inbound/target-schema.js';
import { importJobSchema } from '../import-jobs/schemas.js';

export const inboundTargetBatchSchema = (maxTargets: number) =>
  z
    .strictObject({
      sourceSystem: sourceSystemSchema,
      externalBatchId: z.string().trim().min(1).max(200).nullish().meta({
        description:
          "The source system's id of this batch; also the idempotency key when no Idempotency-Key header is sent.",
      }),
      targets: z
        .array(targetItemSchema)
        .min(1)
        .max(maxTargets) // documentation only: the route counts targets itself (413 beyond)
        .meta({ description: `1 … ${maxTargets} targets (more: 413).` }),
    })
    .meta({ id: 'InboundTargetBatchDto' });

/** The envelope alone: items are validated one by one, so one bad target does not sink the batch. */
export const batchEnvelopeSchema = z.strictObject({
  sourceSystem: sourceSystemSchema,
  externalBatchId: z.string().trim().min(1).max(200).nullish(),
  targets: z.array(z.unknown()).min(1),
});

export const inboundImportResultSchema = importJobSchema
  .extend({
    idempotentReplay: z.boolean().meta({
      description: 'True when this answers a retry (same idempotency key, same body) of an earlier request.',
    }),
  })
  .meta({ id: 'InboundImportResultDto' });
