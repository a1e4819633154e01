import type { TenantTx } from '../../shared/db/tenant-scope.js';
import type { InventoryBalanceDto, InventoryItemDto, InventoryLocationDto } from './schemas.js';

const num = (v: string | null): number | null => (v === null ? null : Number(v));

export async function listItems(tx: TenantTx, tenantId: string): Promise<InventoryItemDto[]> {
  const { rows } = await tx.query(
    `SELECT id, name, sku, category_name, unit_of_measure, track_stock, default_quantity, low_stock_threshold
       FROM inventory_items WHERE tenant_id = $1 ORDER BY name NULLS LAST, id`,
    [tenantId],
  );
  return rows.map((r) => ({
    inventoryItemId: r.id,
    name: r.name,
    sku: r.sku,
    categoryName: r.category_name,
    unitOfMeasure: r.unit_of_measure,
    trackStock: r.track_stock,
    defaultQuantity: num(r.default_quantity),
    lowStockThreshold: num(r.low_stock_threshold),
  }));
}

export async function listLocations(tx: TenantTx, tenantId: string): Promise<InventoryLocationDto[]> {
  const { rows } = await tx.query(
    `SELECT id, name, external_code, location_type, is_default
       FROM inventory_locations WHERE tenant_id = $1 ORDER BY is_default DESC, name NULLS LAST, id`,
    [tenantId],
  );
  return rows.map((r) => ({
    inventoryLocationId: r.id,
    name: r.name,
    externalCode: r.external_code,
    locationType: r.location_type,
    isDefault: r.is_default,
  }));
}

export async function listBalances(tx: TenantTx, tenantId: string): Promise<InventoryBalanceDto[]> {
  const { rows } = await tx.query(
    `SELECT b.item_id, i.name AS item_name, i.sku, b.location_id, l.name AS location_name,
            l.external_code, b.quantity_on_hand, i.unit_of_measure,
            (i.low_stock_threshold IS NOT NULL AND b.quantity_on_hand <= i.low_stock_threshold) AS is_low_stock,
            (b.quantity_on_hand < 0) AS is_negative
       FROM inventory_balances b
       JOIN inventory_items i ON i.id = b.item_id AND i.tenant_id = b.tenant_id
       JOIN inventory_locations l ON l.id = b.location_id AND l.tenant_id = b.tenant_id
      WHERE b.tenant_id = $1
      ORDER BY i.name NULLS LAST, b.item_id, l.name NULLS LAST, b.location_id`,
    [tenantId],
  );
  return rows.map((r) => ({
    inventoryItemId: r.item_id,
    itemName: r.item_name,
    sku: r.sku,
    inventoryLocationId: r.location_id,
    locationName: r.location_name,
    externalLocationCode: r.external_code,
    quantityOnHand: Number(r.quantity_on_hand),
    unitOfMeasure: r.unit_of_measure,
    isLowStock: r.is_low_stock,
    isNegative: r.is_negative,
  }));
}
