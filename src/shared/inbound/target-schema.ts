import { z } from 'zod';

// What a target is: a place the field organisation must visit or serve (a customer site, a
// stop), identified by the source system's external id. Shared by the gateway (validation,
// OpenAPI) and the workers (message decoding).

export const maxTimeWindows = 10;
export const maxTags = 20;
export const maxMetadataBytes = 4096;

const text = (max: number) => z.string().trim().min(1).max(max);

export const addressSchema = z
  .strictObject({
    line1: text(200),
    line2: text(200).nullish(),
    postalCode: text(20).nullish(),
    city: text(100),
    region: text(100).nullish(),
    countryCode: z
      .string()
      .regex(/^[A-Z]{2}$/, 'ISO 3166-1 alpha-2 code in capitals, e.g. DE')
      .meta({ description: 'ISO 3166-1 alpha-2.' }),
  })
  .meta({ id: 'TargetAddress' });

export const coordinatesSchema = z
  .strictObject({
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
  })
  .meta({ id: 'Coordinates', description: 'WGS 84 degrees.' });

export const timeWindowSchema = z
  .strictObject({
    start: z.iso.datetime({ offset: true }).meta({ description: 'ISO 8601 with offset.' }),
    end: z.iso.datetime({ offset: true }),
  })
  .refine((w) => Date.parse(w.end) > Date.parse(w.start), { message: 'end must be after start', path: ['end'] })
  .meta({ id: 'TimeWindow' });

export const metadataSchema = z
  .record(z.string().min(1).max(100), z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= 50, { message: 'at most 50 keys' })
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= maxMetadataBytes, {
    message: `at most ${maxMetadataBytes} bytes as JSON`,
  })
  .meta({ description: `Free key → scalar map from the source system (≤ 50 keys, ≤ ${maxMetadataBytes} bytes).` });

/** The fields of one target (without the source system, which a batch names once). */
export const targetFieldsSchema = z.strictObject({
  externalId: text(100).meta({ description: "The source system's id; unique per source system and tenant." }),
  name: text(200),
  address: addressSchema.nullish(),
  coordinates: coordinatesSchema.nullish(),
  timeWindows: z
    .array(timeWindowSchema)
    .max(maxTimeWindows)
    .nullish()
    .meta({ description: `When the target may be served (≤ ${maxTimeWindows}); none: any time.` }),
  serviceDurationMinutes: z.number().int().min(0).max(1440).nullish().meta({ description: 'Time on site.' }),
  priority: z.number().int().min(1).max(5).nullish().meta({ description: '1 (lowest) … 5 (highest); default 3.' }),
  tags: z.array(text(50)).max(maxTags).nullish(),
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
