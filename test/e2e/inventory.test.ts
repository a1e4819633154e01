import { beforeAll, describe, expect, it } from 'vitest';
import { inventoryLocationTypes } from '../../src/shared/inventory.js';
import { bearer, createDemo, type Demo } from '../support/fixtures.js';
import { useGatewaySuite } from '../support/suite.js';

const suite = useGatewaySuite();
let b: Demo;
beforeAll(async () => {
  b = await createDemo(suite.pool);
});

const read = async (demo: Demo, what: string) => {
  const res = await suite.api.get(`/api/v1/connect/inventory/${what}`, {
    headers: bearer(demo.clients['connect.inventory.read']!.apiKey),
  });
  expect(res.status).toBe(200);
  return res.body as Record<string, unknown>[];
};

const fields = {
  items: [
    'inventoryItemId',
    'name',
    'sku',
    'categoryName',
    'unitOfMeasure',
    'trackStock',
    'defaultQuantity',
    'lowStockThreshold',
  ],
  locations: ['inventoryLocationId', 'name', 'externalCode', 'locationType', 'isDefault'],
  balances: [
    'inventoryItemId',
    'itemName',
    'sku',
    'inventoryLocationId',
    'locationName',
    'externalLocationCode',
    'quantityOnHand',
    'unitOfMeasure',
    'isLowStock',
    'isNegative',
  ],
};

describe('inventory reads', () => {
  it.each(Object.entries(fields))('%s have exactly the fields of spec part 2', async (what, names) => {
    const rows = await read(suite.demo, what);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(Object.keys(row).sort()).toEqual([...names].sort());
  });

  it('types and nullability match the DTOs', async () => {
    for (const item of await read(suite.demo, 'items')) {
      expect(item.inventoryItemId).toMatch(/^[0-9a-f-]{36}$/);
      expect(typeof item.trackStock).toBe('boolean');
      for (const f of ['defaultQuantity', 'lowStockThreshold'])
        expect(item[f] === null || typeof item[f] === 'number').toBe(true);
    }
    for (const loc of await read(suite.demo, 'locations')) {
      expect(inventoryLocationTypes).toContain(loc.locationType);
      expect(typeof loc.isDefault).toBe('boolean');
    }
    for (const bal of await read(suite.demo, 'balances')) expect(typeof bal.quantityOnHand).toBe('number');
  });

  it('derives isLowStock and isNegative from the stored quantities', async () => {
    const items = new Map((await read(suite.demo, 'items')).map((i) => [i.inventoryItemId, i]));
    const balances = await read(suite.demo, 'balances');
    for (const bal of balances) {
      const threshold = items.get(bal.inventoryItemId)!.lowStockThreshold as number | null;
      const qty = bal.quantityOnHand as number;
      expect(bal.isNegative).toBe(qty < 0);
      expect(bal.isLowStock).toBe(threshold !== null && qty <= threshold);
    }
    expect(balances.filter((x) => x.isNegative)).toHaveLength(1);
    expect(balances.some((x) => x.isLowStock && !x.isNegative)).toBe(true);
    expect(balances.some((x) => !x.isLowStock)).toBe(true);
  });

  it('names the location types in use and exactly one default location', async () => {
    const locations = await read(suite.demo, 'locations');
    expect(new Set(locations.map((l) => l.locationType)).size).toBeGreaterThanOrEqual(3);
    expect(locations.filter((l) => l.isDefault)).toHaveLength(1);
  });

  it("never shows one tenant another tenant's inventory", async () => {
    for (const what of ['items', 'locations', 'balances']) {
      const idKey = what === 'locations' ? 'inventoryLocationId' : 'inventoryItemId';
      const ofA = new Set((await read(suite.demo, what)).map((r) => r[idKey]));
      const ofB = (await read(b, what)).map((r) => r[idKey]);
      expect(ofB.length).toBeGreaterThan(0);
      expect(ofB.filter((id) => ofA.has(id))).toEqual([]);
    }
    const { rows } = await suite.pool.query('SELECT count(*)::int AS n FROM inventory_items');
    expect((await read(suite.demo, 'items')).length + (await read(b, 'items')).length).toBe(rows[0].n);
  });
});
