import { z } from 'zod';
import { instantSchema } from '../../shared/common-schemas.js';
import {
  maxExternalEventIdLength,
  maxExternalWorkOrderIdLength,
  maxInt32,
  maxLineQuantity,
  maxUsageLines,
  quantityDecimals,
  usedAtMaxFutureMs,
} from '../../shared/materials/usage.js';
import {
  int32WorkOrderId,
  materialUsageMaterialSchema,
  materialUsageStatusSchema,
} from '../../shared/materials/usage-record.js';

// The contract of work-order material usage (spec parts 2 and 4). The material object and the
// idempotency object have exactly the fields of spec part 2; the request, the response and the
// read record are ours (spec: "not shown") and documented here.

const int32Id = int32WorkOrderId;

// ---- path parameters ------------------------------------------------------------------

export const workOrderIdParamsSchema = z.strictObject({
  workOrderId: z
    .string()
    .regex(/^[1-9]\d{0,9}$/, 'must be a positive integer (int32)')
    .refine((v) => Number(v) <= maxInt32, { message: `must be at most ${maxInt32} (int32)` })
    .meta({ override: { type: 'integer', format: 'int32', minimum: 1, maximum: maxInt32 } }),
});

export const externalWorkOrderIdParamsSchema = z.strictObject({
  externalWorkOrderId: z
    .string()
    .min(1)
    .max(maxExternalWorkOrderIdLength)
    .meta({
      description: `The work order's external id, unique per tenant (1–${maxExternalWorkOrderIdLength} characters, URL-encoded).`,
    }),
});

// ---- request --------------------------------------------------------------------------

const hasAtMostDecimals = (n: number) => Number(n.toFixed(quantityDecimals)) === n;

const exactlyOne = (a: unknown, b: unknown) => (a == null) !== (b == null);

export const materialUsageLineSchema = z
  .strictObject({
    inventoryItemId: z
      .uuid()
      .nullish()
      .meta({ description: 'The inventory item (ConnectInventoryItemDto.inventoryItemId). Give this or sku.' }),
    sku: z.string().min(1).max(100).nullish().meta({
      description:
        "The inventory item by its SKU (exact match within the caller's tenant). Give this or inventoryItemId.",
    }),
    quantity: z
      .number()
      .positive()
      .max(maxLineQuantity)
      .refine(hasAtMostDecimals, { message: `at most ${quantityDecimals} decimal places` })
      .meta({
        description: `Quantity used, in the item's unit of measure: > 0, ≤ ${maxLineQuantity}, at most ${quantityDecimals} decimal places.`,
      }),
    unitOfMeasure: z
      .string()
      .min(1)
      .max(50)
      .nullable()
      .meta({
        description:
          "Must equal the item's unitOfMeasure (compared case-insensitively, surrounding spaces ignored); null only for " +
          'an item without a unit of measure. A guard against quantities counted in another unit: no conversion is made.',
      }),
  })
  .refine((l) => exactlyOne(l.inventoryItemId, l.sku), {
    message: 'give exactly one of inventoryItemId and sku',
    path: ['inventoryItemId'],
  })
  .meta({ id: 'CreateConnectWorkOrderMaterialUsageLine', description: 'One material used.' });

export const createMaterialUsageRequestSchema = z
  .strictObject({
    externalEventId: z
      .string()
      .min(1)
      .max(maxExternalEventIdLength)
      .meta({
        description:
          `The reporting system's id of this usage event (1–${maxExternalEventIdLength} characters): the idempotency key, ` +
          'unique per tenant. Sending it again with the same content is answered 200 with wasAlreadyProcessed = true and ' +
          'moves no stock a second time; with different content it is a 409.',
      }),
    inventoryLocationId: z
      .uuid()
      .nullish()
      .meta({ description: 'Where the materials were taken from (ConnectInventoryLocationDto.inventoryLocationId).' }),
    externalLocationCode: z
      .string()
      .min(1)
      .max(100)
      .nullish()
      .meta({
        description:
          "Where the materials were taken from, by the location's externalCode. Give at most one of inventoryLocationId " +
          "and externalLocationCode; neither: the tenant's default location (isDefault).",
      }),
    usedAt: instantSchema()
      .refine((v) => Date.parse(v) <= Date.now() + usedAtMaxFutureMs, {
        message: `must not be more than ${usedAtMaxFutureMs / 60_000} minutes in the future`,
      })
      .meta({
        description: `When the materials were used: ISO 8601 with offset (Z or ±hh:mm); at most ${usedAtMaxFutureMs / 60_000} minutes in the future.`,
      }),
    materials: z
      .array(materialUsageLineSchema)
      .min(1)
      .max(maxUsageLines)
      .meta({ description: `1–${maxUsageLines} lines; an item may appear on several lines.` }),
  })
  .refine((r) => r.inventoryLocationId == null || r.externalLocationCode == null, {
    message: 'give at most one of inventoryLocationId and externalLocationCode',
    path: ['externalLocationCode'],
  })
  .meta({
    id: 'CreateConnectWorkOrderMaterialUsageRequest',
    description: 'Materials used on a work order, taken from one inventory location.',
  });

export type CreateMaterialUsageRequest = z.output<typeof createMaterialUsageRequestSchema>;

// ---- responses ------------------------------------------------------------------------

export const materialUsageIdempotencySchema = z
  .strictObject({
    externalEventId: z.string().nullable(),
    wasAlreadyProcessed: z.boolean().meta({
      description: 'True when this event id was recorded before with the same content: nothing was recorded again.',
    }),
  })
  .meta({ id: 'ConnectMaterialUsageIdempotencyDto' });

export const materialUsageResponseSchema = z
  .strictObject({
    materialUsageId: z.uuid().meta({ description: 'Id of the recorded usage (see WorkOrderMaterialUsageDto).' }),
    workOrderId: int32Id(),
    externalWorkOrderId: z.string(),
    inventoryLocationId: z.uuid().meta({ description: 'The location the stock is taken from (as resolved).' }),
    usedAt: z.iso.datetime(),
    status: materialUsageStatusSchema,
    materials: z.array(materialUsageMaterialSchema),
    idempotency: materialUsageIdempotencySchema,
  })
  .meta({ id: 'ConnectWorkOrderMaterialUsageResponse' });

export type MaterialUsageResponse = z.infer<typeof materialUsageResponseSchema>;
