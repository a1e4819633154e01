import { z } from 'zod';
import { addressSchema, coordinatesSchema, metadataSchema, text, timeWindowSchema } from '../common-schemas.js';

// What a target is: a place the field organisation must visit or serve (a customer site, a
// stop), identified by the source system's external id. Shared by the gateway (validation,
// OpenAPI) and the workers (message decoding).

export const maxTimeWindows = 10;
export const maxTags = 20;

/** Limits of the target's own fields (text: longest length after trimming). */
export const targetLimits = {
  externalId: 100,
  name: 200,
  tag: 50,
  serviceDurationMinutes: { min: 0, max: 1440 },
  priority: { min: 1, max: 5 },
} as const;

/** The fields of one target (without the source system, which a batch names once). */
export const targetFieldsSchema = z.strictObject({
  externalId: text(targetLimits.externalId).meta({
    description: "The source system's id; unique per source system and tenant.",
  }),
  name: text(targetLimits.name),
  address: addressSchema.nullish(),
  coordinates: coordinatesSchema.nullish(),
  timeWindows: z
    .array(timeWindowSchema)
    .max(maxTimeWindows)
    .nullish()
    .meta({ description: `When the target may be served (≤ ${maxTimeWindows}); none: any time.` }),
  serviceDurationMinutes: z
    .number()
    .int()
    .min(targetLimits.serviceDurationMinutes.min)
    .max(targetLimits.serviceDurationMinutes.max)
    .nullish()
    .meta({ description: 'Time on site.' }),
  priority: z
    .number()
    .int()
    .min(targetLimits.priority.min)
    .max(targetLimits.priority.max)
    .nullish()
    .meta({ description: '1 (lowest) … 5 (highest); default 3.' }),
  tags: z.array(text(targetLimits.tag)).max(maxTags).nullish(),
  metadata: metadataSchema.nullish(),
});

const placeRequired = (t: { address?: unknown; coordinates?: unknown }) => t.address != null || t.coordinates != null;
const placeMessage = { message: 'give an address, coordinates or both', path: ['address'] };

export const targetItemSchema = targetFieldsSchema
  .refine(placeRequired, placeMessage)
  .meta({ id: 'InboundTargetItemDto', description: 'One target of a batch. An address, coordinates or both.' });

export const sourceSystemSchema = text(100).meta({ description: 'Name of the pushing system, e.g. "sap-erp".' });

export const inboundTargetSchema = targetFieldsSchema
  .extend({ sourceSystem: sourceSystemSchema })
  .refine(placeRequired, placeMessage)
  .meta({ id: 'InboundTargetDto', description: 'A single target. An address, coordinates or both.' });

export type TargetFields = z.infer<typeof targetFieldsSchema>;
