import type { TenantTx } from '../../shared/db/tenant-scope.js';

// SQL of the material-usage operations at the edge.

export type WorkOrderRef = { by: 'id'; workOrderId: number } | { by: 'externalId'; externalWorkOrderId: string };
export type WorkOrderRow = { id: number; externalWorkOrderId: string };

export async function findWorkOrder(db: TenantTx, tenantId: string, ref: WorkOrderRef): Promise<WorkOrderRow | null> {
  const { rows } =
    ref.by === 'id'
      ? await db.query('SELECT id, external_work_order_id FROM work_orders WHERE id = $1 AND tenant_id = $2', [
          ref.workOrderId,
          tenantId,
        ])
      : await db.query(
          'SELECT id, external_work_order_id FROM work_orders WHERE external_work_order_id = $1 AND tenant_id = $2',
          [ref.externalWorkOrderId, tenantId],
        );
  const r = rows[0];
  return r ? { id: r.id, externalWorkOrderId: r.external_work_order_id } : null;
}

export type LocationRef = { by: 'id'; id: string } | { by: 'code'; code: string } | { by: 'default' };

export async function findLocation(db: TenantTx, tenantId: string, ref: LocationRef): Promise<{ id: string } | null> {
  const [where, values] =
    ref.by === 'id'
      ? ['id = $2', [ref.id]]
      : ref.by === 'code'
        ? ['external_code = $2', [ref.code]]
        : ['is_default', []];
  const { rows } = await db.query(`SELECT id FROM inventory_locations WHERE tenant_id = $1 AND ${where}`, [
    tenantId,
    ...values,
  ]);
  return rows[0] ? { id: rows[0].id } : null;
}

export type ItemRow = { id: string; sku: string | null; unitOfMeasure: string | null };

/** The tenant's items among the given ids and SKUs (one query for all lines). */
export async function findItems(db: TenantTx, tenantId: string, ids: string[], skus: string[]): Promise<ItemRow[]> {
  const { rows } = await db.query(
    `SELECT id, sku, unit_of_measure FROM inventory_items
      WHERE tenant_id = $1 AND (id = ANY($2::uuid[]) OR sku = ANY($3::text[]))`,
    [tenantId, ids, skus],
  );
  return rows.map((r) => ({ id: r.id, sku: r.sku, unitOfMeasure: r.unit_of_measure }));
}

export type NewUsage = {
  id: string;
  tenantId: string;
  clientId: string;
  workOrderId: number;
  externalEventId: string;
  requestHash: Buffer;
  locationId: string;
  usedAt: string;
  lines: { itemId: string; quantity: string; unitOfMeasure: string | null }[];
};

/**
 * Records the usage and its lines, or returns false when the tenant already used this event id
 * (a concurrent insert of the same id waits on the unique index until the other one ends).
 */
export async function insertUsage(tx: TenantTx, u: NewUsage): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO material_usages (id, tenant_id, client_id, work_order_id, external_event_id, request_hash, location_id, used_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id, external_event_id) DO NOTHING`,
    [u.id, u.tenantId, u.clientId, u.workOrderId, u.externalEventId, u.requestHash, u.locationId, u.usedAt],
  );
  if (rowCount === 0) return false;
  await tx.query(
    `INSERT INTO material_usage_lines (material_usage_id, tenant_id, line_no, item_id, quantity, unit_of_measure)
     SELECT $1, $5, u.ord, u.item_id, u.quantity, u.unit
       FROM unnest($2::uuid[], $3::numeric[], $4::text[]) WITH ORDINALITY AS u(item_id, quantity, unit, ord)`,
    [
      u.id,
      u.lines.map((l) => l.itemId),
      u.lines.map((l) => l.quantity),
      u.lines.map((l) => l.unitOfMeasure),
      u.tenantId,
    ],
  );
  return true;
}

export async function findUsageByEvent(
  db: TenantTx,
  tenantId: string,
  externalEventId: string,
): Promise<{ id: string; requestHash: Buffer; workOrderId: number } | null> {
  const { rows } = await db.query(
    'SELECT id, request_hash, work_order_id FROM material_usages WHERE tenant_id = $1 AND external_event_id = $2',
    [tenantId, externalEventId],
  );
  const r = rows[0];
  return r ? { id: r.id, requestHash: r.request_hash, workOrderId: r.work_order_id } : null;
}
