import { z } from 'zod';

// Value schemas several resources share (targets, jobs, appointment requests): one definition,
// one OpenAPI component each.

export const maxMetadataKeys = 50;
export const maxMetadataBytes = 4096;

export const maxMetadataKeyLength = 100;
export const maxMetadataStringLength = 1000;

export const text = (max: number) => z.string().trim().min(1).max(max);

/** The address's text fields: longest length after trimming, and whether required (as addressSchema says). */
export const addressTextLimits = {
  line1: { max: 200, required: true },
  line2: { max: 200, required: false },
  postalCode: { max: 20, required: false },
  city: { max: 100, required: true },
  region: { max: 100, required: false },
} as const;

/** A page size in a query (take, limit): 1 … max, with a default. */
export const pageSizeQuery = (max: number, byDefault: number) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(max)
    .default(byDefault)
    .meta({ description: `1 … ${max}, default ${byDefault}.` });

export const addressSchema = z
  .strictObject({
    line1: text(addressTextLimits.line1.max),
    line2: text(addressTextLimits.line2.max).nullish(),
    postalCode: text(addressTextLimits.postalCode.max).nullish(),
    city: text(addressTextLimits.city.max),
    region: text(addressTextLimits.region.max).nullish(),
    countryCode: z
      .string()
      .regex(/^[A-Z]{2}$/, 'ISO 3166-1 alpha-2 code in capitals, e.g. DE')
      .meta({ description: 'ISO 3166-1 alpha-2.' }),
  })
  .meta({ id: 'Address' });

export const coordinatesSchema = z
  .strictObject({
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
  })
  .meta({ id: 'Coordinates', description: 'WGS 84 degrees.' });

/**
 * An instant sent by a client: ISO 8601 with offset (Z or ±hh:mm), in the range PostgreSQL's
 * timestamptz stores (years 1 … 9999 in UTC, offsets up to ±15:59), so no accepted value fails later.
 */
export const instantSchema = () =>
  z.iso.datetime({ offset: true }).refine(instantInRange, {
    message: 'must lie between the years 1 and 9999 (UTC), with an offset of at most ±15:59',
  });

/** Whether an ISO 8601 instant lies in what timestamptz stores (instantSchema's refinement). */
export function instantInRange(v: string): boolean {
  const offset = /([+-])(\d{2}):?(\d{2})$/.exec(v);
  if (offset && Number(offset[2]) > 15) return false;
  const year = new Date(v).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

export const timeWindowSchema = z
  .strictObject({
    start: instantSchema().meta({ description: 'ISO 8601 with offset.' }),
    end: instantSchema(),
  })
  .refine((w) => Date.parse(w.end) > Date.parse(w.start), { message: 'end must be after start', path: ['end'] })
  .meta({ id: 'TimeWindow' });

export const metadataSchema = z
  .record(
    z.string().min(1).max(maxMetadataKeyLength),
    z.union([z.string().max(maxMetadataStringLength), z.number(), z.boolean(), z.null()]),
  )
  .refine((m) => Object.keys(m).length <= maxMetadataKeys, { message: `at most ${maxMetadataKeys} keys` })
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= maxMetadataBytes, {
    message: `at most ${maxMetadataBytes} bytes as JSON`,
  })
  .meta({
    description: `Free key → scalar map from the source system (≤ ${maxMetadataKeys} keys, ≤ ${maxMetadataBytes} bytes).`,
  });
