import { randomUUID } from 'node:crypto';
import { generateApiKey } from '../../shared/api-keys.js';
import { inTransaction } from '../../shared/db/pool.js';
import { integrationScopes } from '../../shared/scopes.js';
import { nameArg, parseOptions } from '../args.js';
import type { Command } from '../command.js';
import { demoBalances, demoItems, demoJobTypes, demoLocations, demoWorkOrderTitles } from '../demo-data.js';
import {
  insertApiKeys,
  insertClients,
  insertInventoryBalances,
  insertInventoryItems,
  insertInventoryLocations,
  insertTenant,
  insertJobTypes,
  insertWorkOrders,
} from '../store.js';

type DemoResult = {
  tenantId: string;
  clients: Record<string, { clientId: string; apiKey: string }>;
  workOrders: { workOrderId: number; externalWorkOrderId: string }[];
};

// Client label → the scopes of its one key: one client per scope, plus `all` and `none`.
const demoClientScopes: [label: string, scopes: readonly string[]][] = [
  ['all', integrationScopes],
  ['none', []],
  ...integrationScopes.map((s): [string, readonly string[]] => [s, [s]]),
];

export const demo: Command<{ name: string | null }> = {
  name: 'demo',
  synopsis: '[--name <tenant name>]',
  summary:
    'Create a new demo tenant with inventory, stock balances, 3 work orders and one client+key per scope, plus "all" and "none".',
  parse(args) {
    const v = parseOptions(args, { name: { type: 'string' } });
    return { name: v.name === undefined ? null : nameArg(v.name) };
  },
  run: ({ pool }, { name }) =>
    inTransaction(pool, async (tx): Promise<DemoResult> => {
      const tenantId = randomUUID();
      const short = tenantId.slice(0, 8);
      await insertTenant(tx, { id: tenantId, name: name ?? `Demo tenant ${short}` });

      const itemIds = new Map(demoItems.map((i) => [i.key, randomUUID()]));
      const locationIds = new Map(demoLocations.map((l) => [l.key, randomUUID()]));
      await insertInventoryItems(
        tx,
        tenantId,
        demoItems.map(({ key, ...item }) => ({ id: itemIds.get(key)!, ...item })),
      );
      await insertInventoryLocations(
        tx,
        tenantId,
        demoLocations.map(({ key, ...location }) => ({ id: locationIds.get(key)!, ...location })),
      );
      await insertInventoryBalances(
        tx,
        tenantId,
        demoBalances.map((b) => ({
          itemId: itemIds.get(b.item)!,
          locationId: locationIds.get(b.location)!,
          quantityOnHand: b.quantityOnHand,
        })),
      );
      await insertJobTypes(tx, tenantId, demoJobTypes);
      const workOrders = await insertWorkOrders(
        tx,
        tenantId,
        demoWorkOrderTitles.map((title, i) => ({ externalWorkOrderId: `WO-DEMO-${short}-${i + 1}`, title })),
      );

      const clients = demoClientScopes.map(([label, scopes]) => ({
        label,
        scopes,
        clientId: randomUUID(),
        keyId: randomUUID(),
        key: generateApiKey(),
      }));
      await insertClients(
        tx,
        clients.map((c) => ({ id: c.clientId, tenantId, name: `demo ${c.label}`, rateLimitPerMinute: null })),
      );
      await insertApiKeys(
        tx,
        clients.map((c) => ({
          id: c.keyId,
          clientId: c.clientId,
          prefix: c.key.prefix,
          hash: c.key.hash,
          expiresAt: null,
          scopes: c.scopes,
        })),
      );

      return {
        tenantId,
        clients: Object.fromEntries(clients.map((c) => [c.label, { clientId: c.clientId, apiKey: c.key.key }])),
        workOrders,
      };
    }),
};
