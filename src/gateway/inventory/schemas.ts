import { z } from 'zod';
import { inventoryLocationTypes } from '../../shared/inventory.js';

// Exactly the DTO fields of spec part 2.

export const inventoryLocationTypeSchema = z.enum(inventoryLocationTypes).meta({
  id: 'InventoryLocationType',
  description:
    'Warehouse: a depot or store room. Vehicle: a service van. Technician: stock carried by a person. ' +
    'CustomerSite: consignment stock at a customer. Transit: goods between locations.',
});

export const inventoryItemSchema = z
  .strictObject({
    inventoryItemId: z.uuid(),
    name: z.string().nullable(),
    sku: z.string().nullable(),
    categoryName: z.string().nullable(),
    unitOfMeasure: z.string().nullable(),
    trackStock: z.boolean(),
    defaultQuantity: z.number().nullable(),
    lowStockThreshold: z.number().nullable(),
  })
  .meta({ id: 'ConnectInventoryItemDto' });

export const inventoryLocationSchema = z
  .strictObject({
    inventoryLocationId: z.uuid(),
    name: z.string().nullable(),
    externalCode: z.string().nullable(),
    locationType: inventoryLocationTypeSchema,
    isDefault: z.boolean(),
  })
  .meta({ id: 'ConnectInventoryLocationDto' });

export const inventoryBalanceSchema = z
  .strictObject({
    inventoryItemId: z.uuid(),
    itemName: z.string().nullable(),
    sku: z.string().nullable(),
    inventoryLocationId: z.uuid(),
    locationName: z.string().nullable(),
    externalLocationCode: z.string().nullable(),
    quantityOnHand: z.number(),
    unitOfMeasure: z.string().nullable(),
    isLowStock: z.boolean().meta({ description: 'lowStockThreshold is set and quantityOnHand <= lowStockThreshold.' }),
    isNegative: z.boolean().meta({ description: 'quantityOnHand < 0.' }),
  })
  .meta({ id: 'ConnectInventoryBalanceDto' });

export type InventoryItemDto = z.infer<typeof inventoryItemSchema>;
export type InventoryLocationDto = z.infer<typeof inventoryLocationSchema>;
export type InventoryBalanceDto = z.infer<typeof inventoryBalanceSchema>;
