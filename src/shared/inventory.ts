// Where stock can sit. Warehouse: a depot or store room. Vehicle: a service van's stock.
// Technician: stock carried by a person. CustomerSite: consignment stock at a customer.
// Transit: goods on their way between locations.
export const inventoryLocationTypes = ['Warehouse', 'Vehicle', 'Technician', 'CustomerSite', 'Transit'] as const;
export type InventoryLocationType = (typeof inventoryLocationTypes)[number];
