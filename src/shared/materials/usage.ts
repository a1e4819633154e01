// Material usage on a work order: what a technician's device or an ERP reports as used, and
// the stock it takes from one inventory location. Shared by the gateway and the worker.

/**
 * Pending: recorded (the answer was 200), stock not moved yet. Applied: the materials worker
 * booked the stock movements. Failed: the worker could not apply it after retries (its message
 * went to the dead-letter topic); no stock moved.
 */
export const materialUsageStatuses = ['Pending', 'Applied', 'Failed'] as const;

export const maxUsageLines = 100;
export const maxLineQuantity = 1_000_000;
export const quantityDecimals = 4;
export const maxExternalEventIdLength = 200;
/** How far usedAt may lie in the future (clock skew of devices). */
export const usedAtMaxFutureMs = 5 * 60_000;
export const maxExternalWorkOrderIdLength = 100;
export const maxInt32 = 2_147_483_647;
