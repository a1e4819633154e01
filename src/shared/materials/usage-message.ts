import { z } from 'zod';
import { messageSchema } from '../messages.js';

// workorder.materials.usage v1: "book this recorded usage". The usage and its lines are the
// edge ledger rows the gateway committed with this message (material_usages,
// material_usage_lines); the worker applies those rows, so the message carries only the ids
// assigned at the edge. Keyed by work order id: one work order's usages stay in order.
export const usageMessageType = 'workorder.materials.usage';
export const usageMessageVersion = 1;

export const usagePayloadSchema = z.object({
  materialUsageId: z.uuid(),
  workOrderId: z.number().int().min(1).max(2_147_483_647),
  externalEventId: z.string().min(1).max(200),
});

export type UsagePayload = z.infer<typeof usagePayloadSchema>;

export const usageMessageSchema = messageSchema(usageMessageType, usageMessageVersion, usagePayloadSchema);
