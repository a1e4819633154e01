import { z } from 'zod';
import type { TenantPool, TenantTx } from '../../shared/db/tenant-scope.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { inventoryBalanceSchema, inventoryItemSchema, inventoryLocationSchema } from './schemas.js';
import { listBalances, listItems, listLocations } from './store.js';

const list = (
  path: string,
  operationId: string,
  summary: string,
  schema: z.ZodType,
  load: (tx: TenantTx, tenantId: string) => Promise<unknown[]>,
  pool: TenantPool,
) =>
  defineRoute({
    method: 'get',
    path,
    operationId,
    summary,
    description: "All of the caller's tenant's records, ordered by name.",
    tag: 'Inventory',
    auth: 'apiKey',
    responses: { 200: { description: summary, schema: z.array(schema) } },
    handler: async ({ client }) => ({
      status: 200,
      body: await pool.run(client.tenantId, (tx) => load(tx, client.tenantId)),
    }),
  });

export const inventoryRoutes = (pool: TenantPool): RouteDefinition[] => [
  list(
    '/api/v1/connect/inventory/items',
    'listInventoryItems',
    'Inventory items',
    inventoryItemSchema,
    listItems,
    pool,
  ),
  list(
    '/api/v1/connect/inventory/locations',
    'listInventoryLocations',
    'Inventory locations',
    inventoryLocationSchema,
    listLocations,
    pool,
  ),
  list(
    '/api/v1/connect/inventory/balances',
    'listInventoryBalances',
    'Stock balances per item and location',
    inventoryBalanceSchema,
    listBalances,
    pool,
  ),
];
