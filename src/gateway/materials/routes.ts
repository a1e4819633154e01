import { z } from 'zod';
import {
  maxExternalEventIdLength,
  maxLineQuantity,
  maxUsageLines,
  quantityDecimals,
  usedAtMaxFutureMs,
} from '../../shared/materials/usage.js';
import {
  defineRoute,
  type HandlerInput,
  type HandlerResult,
  type RouteDefinition,
} from '../routes/route-definition.js';
import { listMaterialUsages, recordMaterialUsage } from './record-usage.js';
import {
  createMaterialUsageRequestSchema,
  externalWorkOrderIdParamsSchema,
  materialUsageResponseSchema,
  workOrderIdParamsSchema,
  type CreateMaterialUsageRequest,
} from './schemas.js';
import { workOrderMaterialUsageSchema } from '../../shared/materials/usage-record.js';
import type { WorkOrderRef } from './store.js';
import type { WriteDeps } from '../edge/record-then-produce.js';

const tag = 'Work-order materials';

const notFoundNote =
  '404 for an unknown work order or one of another tenant. Work orders created through job creation exist once the job ' +
  'is materialised, normally within a second (until then: 404, retry).';

const postDescription =
  'Records materials used on a work order, taken from one inventory location, and hands the stock movement to the ' +
  'materials worker. Both addresses (numeric id, external work-order id) are one operation with one behaviour.\n\n' +
  "- **Synchronous checks** (answered now): the work order exists for the caller's tenant; the body is valid " +
  `(1–${maxUsageLines} lines; quantity > 0, ≤ ${maxLineQuantity}, at most ${quantityDecimals} decimals; externalEventId ` +
  `1–${maxExternalEventIdLength} characters; usedAt with offset, at most ${usedAtMaxFutureMs / 60_000} minutes ahead) ` +
  "→ 400 validation_failed; every item and the location resolve in the tenant and each unit equals the item's " +
  'unitOfMeasure (case-insensitive) → else 400 inventory_reference_invalid with one field error per problem.\n' +
  '- **Idempotency** by (tenant, externalEventId): the same event id with the same content (after resolution: the same ' +
  'work order, location, usedAt instant, items, quantities, in order) answers 200 with the recorded usage, ' +
  'idempotency.wasAlreadyProcessed = true and its current status, and moves no stock again; with different content ' +
  'it is a 409 idempotency_conflict. Event ids are kept as long as the usage.\n' +
  '- **Read-your-writes**: a 200 means the usage is recorded durably with status Pending; GET …/materials shows it at ' +
  'once. The worker then books one stock movement per line of a tracked item (trackStock = true) at the location ' +
  '(quantityOnHand goes down; it may go negative) and sets the status Applied. Balances catch up within about a second ' +
  'under normal load (the lag is the Kafka hand-over plus one transaction per usage; usages of one work order are ' +
  'applied in order). Untracked items (trackStock = false) are recorded and move no balance.\n\n' +
  notFoundNote;

const postCommon = {
  method: 'post' as const,
  summary: 'Record material usage on a work order',
  description: postDescription,
  tag,
  auth: 'apiKey' as const,
  body: createMaterialUsageRequestSchema,
  errorStatuses: [404, 409],
  responses: {
    200: {
      description:
        'Recorded (status Pending), or the replay of an earlier identical event (wasAlreadyProcessed = true).',
      schema: materialUsageResponseSchema,
    },
  },
};

export function materialRoutes(deps: WriteDeps): RouteDefinition[] {
  /** The one handler of both POST addresses: they differ only in how the work order is named. */
  const record =
    <P>(refOf: (params: P) => WorkOrderRef) =>
    async ({
      params,
      body,
      client,
      requestId,
      correlationId,
    }: HandlerInput<P, unknown, CreateMaterialUsageRequest>): Promise<HandlerResult> => ({
      status: 200,
      body: await recordMaterialUsage(deps, client, { requestId, correlationId }, refOf(params), body),
    });

  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/connect/work-orders/{workOrderId}/materials',
      operationId: 'listWorkOrderMaterialUsages',
      summary: 'Material usage recorded on a work order',
      description:
        'Every usage recorded on the work order, oldest usedAt first, including those still Pending (recorded, stock ' +
        `not moved yet). ${notFoundNote}`,
      tag,
      auth: 'apiKey',
      params: workOrderIdParamsSchema,
      errorStatuses: [404],
      responses: { 200: { description: 'The usages', schema: z.array(workOrderMaterialUsageSchema) } },
      async handler({ params, client }) {
        const ref: WorkOrderRef = { by: 'id', workOrderId: Number(params.workOrderId) };
        return { status: 200, body: await listMaterialUsages(deps.tenantPool, client.tenantId, ref) };
      },
    }),
    defineRoute({
      ...postCommon,
      path: '/api/v1/connect/work-orders/{workOrderId}/materials',
      operationId: 'recordWorkOrderMaterialUsage',
      params: workOrderIdParamsSchema,
      handler: record((p: { workOrderId: string }) => ({ by: 'id', workOrderId: Number(p.workOrderId) })),
    }),
    defineRoute({
      ...postCommon,
      path: '/api/v1/connect/work-orders/by-external-id/{externalWorkOrderId}/materials',
      operationId: 'recordWorkOrderMaterialUsageByExternalId',
      summary: 'Record material usage on a work order (by external work-order id)',
      params: externalWorkOrderIdParamsSchema,
      handler: record((p: { externalWorkOrderId: string }) => ({
        by: 'externalId',
        externalWorkOrderId: p.externalWorkOrderId,
      })),
    }),
  ];
}
