import type { InventoryLocationType } from '../shared/inventory.js';
import type { NewInventoryItem } from './store.js';

// The fixed catalogue `demo` loads into a fresh tenant. SKUs and external codes only need
// to be unique within a tenant, so every demo tenant gets the same ones.

export type DemoItem = Omit<NewInventoryItem, 'id'> & { key: string };

export const demoItems = [
  {
    key: 'pipe',
    name: 'Copper pipe 15 mm',
    sku: 'CU-PIPE-15',
    categoryName: 'Plumbing',
    unitOfMeasure: 'm',
    trackStock: true,
    defaultQuantity: 2,
    lowStockThreshold: 20,
  },
  {
    key: 'valve',
    name: 'Ball valve 1/2"',
    sku: 'VALVE-BALL-12',
    categoryName: 'Plumbing',
    unitOfMeasure: 'pcs',
    trackStock: true,
    defaultQuantity: 1,
    lowStockThreshold: 5,
  },
  {
    key: 'cable',
    name: 'Installation cable 3x1.5 mm²',
    sku: 'CABLE-NYM-3X15',
    categoryName: 'Electrical',
    unitOfMeasure: 'm',
    trackStock: true,
    defaultQuantity: 10,
    lowStockThreshold: null,
  },
  {
    key: 'breaker',
    name: 'Circuit breaker B16',
    sku: 'BREAKER-B16',
    categoryName: 'Electrical',
    unitOfMeasure: 'pcs',
    trackStock: true,
    defaultQuantity: null,
    lowStockThreshold: 4,
  },
  {
    key: 'filter',
    name: 'Air filter F7 592x592',
    sku: 'FILTER-F7-592',
    categoryName: 'HVAC',
    unitOfMeasure: 'pcs',
    trackStock: true,
    defaultQuantity: null,
    lowStockThreshold: 10,
  },
  {
    key: 'tape',
    name: 'PTFE sealing tape',
    sku: 'TAPE-PTFE-12',
    categoryName: 'Consumables',
    unitOfMeasure: 'roll',
    trackStock: false,
    defaultQuantity: 1,
    lowStockThreshold: null,
  },
  {
    key: 'labour',
    name: 'Service labour (hour)',
    sku: 'SVC-LABOUR-H',
    categoryName: 'Services',
    unitOfMeasure: 'h',
    trackStock: false,
    defaultQuantity: 1,
    lowStockThreshold: null,
  },
] as const satisfies readonly DemoItem[];

export type DemoLocation = {
  key: string;
  name: string;
  externalCode: string;
  locationType: InventoryLocationType;
  isDefault: boolean;
};

export const demoLocations = [
  { key: 'warehouse', name: 'Main warehouse', externalCode: 'WH-MAIN', locationType: 'Warehouse', isDefault: true },
  { key: 'van1', name: 'Service van 1', externalCode: 'VAN-01', locationType: 'Vehicle', isDefault: false },
  { key: 'van2', name: 'Service van 2', externalCode: 'VAN-02', locationType: 'Vehicle', isDefault: false },
  {
    key: 'tech',
    name: 'Technician Alex Berg',
    externalCode: 'TECH-ABERG',
    locationType: 'Technician',
    isDefault: false,
  },
  {
    key: 'site',
    name: 'Harbour Hospital plant room',
    externalCode: 'SITE-HARBOUR',
    locationType: 'CustomerSite',
    isDefault: false,
  },
  { key: 'transit', name: 'In transit', externalCode: 'TRANSIT', locationType: 'Transit', isDefault: false },
] as const satisfies readonly DemoLocation[];

type ItemKey = (typeof demoItems)[number]['key'];
type LocationKey = (typeof demoLocations)[number]['key'];

// Low = at or below the item's lowStockThreshold; exactly one balance is negative.
export const demoBalances: readonly { item: ItemKey; location: LocationKey; quantityOnHand: number }[] = [
  { item: 'pipe', location: 'warehouse', quantityOnHand: 250 },
  { item: 'pipe', location: 'van1', quantityOnHand: 12 }, // low (threshold 20)
  { item: 'valve', location: 'warehouse', quantityOnHand: 40 },
  { item: 'valve', location: 'van1', quantityOnHand: 5 }, // low: exactly at the threshold
  { item: 'valve', location: 'tech', quantityOnHand: -2 }, // negative: used before it was booked in
  { item: 'cable', location: 'warehouse', quantityOnHand: 500 },
  { item: 'cable', location: 'van2', quantityOnHand: 35.5 },
  { item: 'breaker', location: 'warehouse', quantityOnHand: 3 }, // low (threshold 4)
  { item: 'breaker', location: 'van2', quantityOnHand: 6 },
  { item: 'filter', location: 'warehouse', quantityOnHand: 24 },
  { item: 'filter', location: 'site', quantityOnHand: 8 }, // low (threshold 10)
  { item: 'filter', location: 'transit', quantityOnHand: 12 },
];

export const demoWorkOrderTitles = [
  'Annual boiler service',
  'Replace circuit breakers in distribution board',
  'Quarterly air filter change',
] as const;

export const demoJobTypes = [
  { code: 'MAINTENANCE', name: 'Scheduled maintenance', defaultDurationMinutes: 60 },
  { code: 'REPAIR', name: 'Repair', defaultDurationMinutes: 90 },
  { code: 'INSTALLATION', name: 'Installation', defaultDurationMinutes: 180 },
  { code: 'INSPECTION', name: 'Inspection', defaultDurationMinutes: 45 },
] as const;
