import { z } from 'zod';
import type { Queryable } from '../db/pool.js';
import { materialUsageStatuses, maxInt32 } from './usage.js';
import { iso } from '../iso-time.js';

// A recorded material usage as clients read it: the REST answers (GET and POST of
// /work-orders/{id}/material-usages) and the work_order.materials_recorded webhook event carry
// this one shape, built by this one query.

export const int32WorkOrderId = () =>
  z.number().int().min(1).max(maxInt32).meta({ format: 'int32', description: 'Numeric work-order id (int32).' });

export const materialUsageStatusSchema = z.enum(materialUsageStatuses).meta({
  id: 'MaterialUsageStatus',
  description:
    'Pending: recorded (the POST answered 200) but the stock not moved yet; the materials worker books it, ' +
    'normally within a second. Applied: the stock movements are booked and the balances show them. ' +
    'Failed: the worker could not book it after retries (see failureReason); no stock moved. Applied and Failed are final.',
});

export const materialUsageMaterialSchema = z
  .strictObject({
    inventoryItemId: z.uuid(),
    sku: z.string().nullable(),
    name: z.string().nullable(),
    quantity: z.number().meta({ description: 'Quantity used (positive), in unitOfMeasure.' }),
    unitOfMeasure: z.string().nullable(),
  })
  .meta({
    id: 'ConnectMaterialUsageMaterialDto',
    description:
      "A recorded material; sku and name are the item's current ones, unitOfMeasure the item's when recorded.",
  });

export const workOrderMaterialUsageSchema = z
  .strictObject({
    materialUsageId: z.uuid(),
    workOrderId: int32WorkOrderId(),
    externalWorkOrderId: z.string(),
    externalEventId: z.string(),
    status: materialUsageStatusSchema,
    failureReason: z.string().nullable().meta({ description: 'Why the usage Failed; null otherwise.' }),
    inventoryLocationId: z.uuid(),
    locationName: z.string().nullable(),
    externalLocationCode: z.string().nullable(),
    usedAt: z.iso.datetime().meta({ description: 'When the materials were used (as reported), UTC.' }),
    recordedAt: z.iso.datetime().meta({ description: 'When the service recorded the usage (the POST), UTC.' }),
    appliedAt: z.iso.datetime().nullable().meta({ description: 'When the stock was booked; null while Pending.' }),
    materials: z.array(materialUsageMaterialSchema).meta({ description: 'In request order.' }),
  })
  .meta({ id: 'WorkOrderMaterialUsageDto', description: 'A material usage recorded on a work order.' });

export type WorkOrderMaterialUsageDto = z.infer<typeof workOrderMaterialUsageSchema>;

/** The usages of one work order (oldest use first), or one usage by id; always the tenant's own. */
export async function loadUsages(
  db: Queryable,
  tenantId: string,
  which: { workOrderId: number } | { usageId: string },
): Promise<WorkOrderMaterialUsageDto[]> {
  const [where, value] =
    'usageId' in which ? ['u.id = $2', which.usageId] : ['u.work_order_id = $2', which.workOrderId];
  const { rows } = await db.query(
    `SELECT u.id, u.work_order_id, w.external_work_order_id, u.external_event_id, u.status, u.failure_reason,
            u.location_id, l.name AS location_name, l.external_code, u.used_at, u.created_at, u.applied_at,
            (SELECT json_agg(json_build_object('inventoryItemId', i.id, 'sku', i.sku, 'name', i.name,
                                               'quantity', ml.quantity, 'unitOfMeasure', ml.unit_of_measure)
                             ORDER BY ml.line_no)
               FROM material_usage_lines ml JOIN inventory_items i ON i.id = ml.item_id
              WHERE ml.material_usage_id = u.id) AS materials
       FROM material_usages u
       JOIN work_orders w ON w.id = u.work_order_id
       JOIN inventory_locations l ON l.id = u.location_id
      WHERE u.tenant_id = $1 AND ${where}
      ORDER BY u.used_at, u.created_at, u.id`,
    [tenantId, value],
  );
  return rows.map((r) => ({
    materialUsageId: r.id,
    workOrderId: r.work_order_id,
    externalWorkOrderId: r.external_work_order_id,
    externalEventId: r.external_event_id,
    status: r.status,
    failureReason: r.failure_reason,
    inventoryLocationId: r.location_id,
    locationName: r.location_name,
    externalLocationCode: r.external_code,
    usedAt: iso(r.used_at)!,
    recordedAt: iso(r.created_at)!,
    appliedAt: iso(r.applied_at),
    materials: (r.materials ?? []).map((m: { quantity: number | string }) => ({ ...m, quantity: Number(m.quantity) })),
  }));
}
