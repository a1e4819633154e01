import type { Pool } from '../../src/shared/db/pool.js';
import { untilNotRefused, type ApiClient } from './api-client.js';
import { bearer, createClientWithKey } from './fixtures.js';

// The material-usage load of the concurrency and crash tests: many usages of ONE item at ONE
// location, from concurrent Integration Clients, over several work orders and both POST
// addresses, with some event ids sent again (replays, some racing their original).

export const materialsPath = {
  byId: (workOrderId: number | string) => `/api/v1/connect/work-orders/${workOrderId}/materials`,
  byExternalId: (externalWorkOrderId: string) =>
    `/api/v1/connect/work-orders/by-external-id/${encodeURIComponent(externalWorkOrderId)}/materials`,
};

export type UsageLoadOptions = {
  api: ApiClient;
  pool: Pool;
  tenantId: string;
  workOrders: { workOrderId: number; externalWorkOrderId: string }[];
  item: { inventoryItemId: string; sku: string; unitOfMeasure: string };
  locationCode: string;
  prefix: string;
  total?: number;
  distinct?: number;
  clients?: number;
  /** Send a usage refused 429 or 503 again after its Retry-After, until this many ms have passed (default: not). */
  retryRefusedForMs?: number;
};

export type UsageLoadResult = {
  /** Sum of the quantities of the distinct events: what the balance must go down by. */
  expectedDecrease: number;
  eventIds: string[];
  responses: { eventId: string; status: number; wasAlreadyProcessed: boolean | undefined; usageId: string }[];
};

/** Sends `total` usages (`distinct` event ids, the rest replays) from `clients` concurrent clients. */
export async function runUsageLoad(o: UsageLoadOptions): Promise<UsageLoadResult> {
  const total = o.total ?? 1000;
  const distinct = o.distinct ?? 800;
  const clientCount = o.clients ?? 20;
  const eighths = (i: number) => (i % 9) + 1; // quantity i = eighths(i) / 8: exact in numeric(18,4)
  const eventId = (i: number) => `${o.prefix}-${i}`;
  const body = (i: number, byItemId: boolean) => ({
    externalEventId: eventId(i),
    externalLocationCode: o.locationCode,
    usedAt: new Date(Date.UTC(2025, 5, 1, 8, 0, 0) + i * 1000).toISOString(),
    materials: [
      {
        ...(byItemId ? { inventoryItemId: o.item.inventoryItemId } : { sku: o.item.sku }),
        quantity: eighths(i) / 8,
        unitOfMeasure: i % 3 === 0 ? o.item.unitOfMeasure.toUpperCase() : o.item.unitOfMeasure,
      },
    ],
  });
  type Send = { i: number; viaExternalId: boolean; byItemId: boolean };
  const sends: Send[] = [];
  for (let i = 0; i < distinct; i++) sends.push({ i, viaExternalId: i % 2 === 1, byItemId: false });
  // Replays: the same content through the other address and by item id instead of SKU.
  for (let k = 0; k < total - distinct; k++) {
    const i = (k * 37) % distinct;
    sends.push({ i, viaExternalId: i % 2 === 0, byItemId: true });
  }
  // Deterministic shuffle, so replays race their originals.
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (let j = sends.length - 1; j > 0; j--) {
    const r = Math.floor(rnd() * (j + 1));
    [sends[j], sends[r]] = [sends[r]!, sends[j]!];
  }

  const clients = await Promise.all(
    Array.from({ length: clientCount }, () =>
      createClientWithKey(o.pool, o.tenantId, 'connect.workorders.materials.write'),
    ),
  );
  const responses: UsageLoadResult['responses'] = [];
  await Promise.all(
    clients.map(async (client, c) => {
      for (let s = c; s < sends.length; s += clientCount) {
        const send = sends[s]!;
        const wo = o.workOrders[send.i % o.workOrders.length]!;
        const path = send.viaExternalId
          ? materialsPath.byExternalId(wo.externalWorkOrderId)
          : materialsPath.byId(wo.workOrderId);
        const post = () => o.api.post(path, { body: body(send.i, send.byItemId), headers: bearer(client.apiKey) });
        const res = o.retryRefusedForMs ? await untilNotRefused(post, o.retryRefusedForMs) : await post();
        responses.push({
          eventId: eventId(send.i),
          status: res.status,
          wasAlreadyProcessed: res.body?.idempotency?.wasAlreadyProcessed,
          usageId: res.body?.materialUsageId,
        });
      }
    }),
  );
  let sumEighths = 0;
  for (let i = 0; i < distinct; i++) sumEighths += eighths(i);
  return {
    expectedDecrease: sumEighths / 8,
    eventIds: Array.from({ length: distinct }, (_, i) => eventId(i)),
    responses,
  };
}

/** Per distinct event id of the load: its usage's status and how many stock movements it has. */
export async function usageLedger(pool: Pool, tenantId: string, prefix: string) {
  const { rows } = await pool.query(
    `SELECT u.external_event_id, u.status, count(m.id)::int AS movements
       FROM material_usages u LEFT JOIN stock_movements m ON m.material_usage_id = u.id
      WHERE u.tenant_id = $1 AND u.external_event_id LIKE $2
      GROUP BY u.id`,
    [tenantId, `${prefix}-%`],
  );
  return rows as { external_event_id: string; status: string; movements: number }[];
}

export async function balanceOf(pool: Pool, itemId: string, locationId: string): Promise<number | null> {
  const { rows } = await pool.query(
    'SELECT quantity_on_hand FROM inventory_balances WHERE item_id = $1 AND location_id = $2',
    [itemId, locationId],
  );
  return rows[0] ? Number(rows[0].quantity_on_hand) : null;
}
