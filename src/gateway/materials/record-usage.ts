import { randomUUID } from 'node:crypto';
import type { TenantPool, TenantTx } from '../../shared/db/tenant-scope.js';
import { AppError, type FieldErrors } from '../../shared/errors.js';
import { topicNames } from '../../shared/kafka/topics.js';
import { quantityDecimals } from '../../shared/materials/usage.js';
import { loadUsages, type WorkOrderMaterialUsageDto } from '../../shared/materials/usage-record.js';
import { usageMessageType, usageMessageVersion, type UsagePayload } from '../../shared/materials/usage-message.js';
import { envelope, jsonMessage } from '../../shared/messages.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { recordThenProduce, type WriteDeps } from '../edge/record-then-produce.js';
import { contentFingerprint } from '../http/fingerprint.js';
import type { CreateMaterialUsageRequest, MaterialUsageResponse } from './schemas.js';
import {
  findItems,
  findLocation,
  findUsageByEvent,
  findWorkOrder,
  insertUsage,
  type ItemRow,
  type LocationRef,
  type WorkOrderRef,
  type WorkOrderRow,
} from './store.js';

/** The one 404 of both POST addresses and the GET. */
export function workOrderNotFound(ref: WorkOrderRef): AppError {
  const name =
    ref.by === 'id' ? `Work order ${ref.workOrderId}` : `Work order with external id "${ref.externalWorkOrderId}"`;
  return new AppError(
    'resource_not_found',
    `${name} was not found. A work order created through job creation exists once its job is materialised, ` +
      'normally within a second: retry shortly if the job was just created.',
  );
}

export async function resolveWorkOrder(db: TenantTx, tenantId: string, ref: WorkOrderRef): Promise<WorkOrderRow> {
  const workOrder = await findWorkOrder(db, tenantId, ref);
  if (!workOrder) throw workOrderNotFound(ref);
  return workOrder;
}

type Resolved = {
  locationId: string;
  usedAt: string;
  lines: { itemId: string; quantity: string; unitOfMeasure: string | null }[];
};

const sameUnit = (a: string | null, b: string | null) =>
  a === null || b === null ? a === b : a.trim().toLowerCase() === b.trim().toLowerCase();

/**
 * Resolves the location and items of the tenant and checks units; every unresolvable reference
 * is reported at once as a 400 (inventory_reference_invalid) with one field error each.
 */
async function resolveReferences(tx: TenantTx, tenantId: string, req: CreateMaterialUsageRequest): Promise<Resolved> {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);

  const locationRef: LocationRef =
    req.inventoryLocationId != null
      ? { by: 'id', id: req.inventoryLocationId }
      : req.externalLocationCode != null
        ? { by: 'code', code: req.externalLocationCode }
        : { by: 'default' };
  const location = await findLocation(tx, tenantId, locationRef);
  if (!location) {
    if (locationRef.by === 'id') add('inventoryLocationId', 'No inventory location with this id.');
    else if (locationRef.by === 'code') add('externalLocationCode', 'No inventory location with this external code.');
    else add('inventoryLocationId', 'No location given and the tenant has no default location.');
  }

  const ids = req.materials.flatMap((m) => (m.inventoryItemId != null ? [m.inventoryItemId] : []));
  const skus = req.materials.flatMap((m) => (m.sku != null ? [m.sku] : []));
  const items = await findItems(tx, tenantId, ids, skus);
  const byId = new Map<string, ItemRow>(items.map((i) => [i.id, i]));
  const bySku = new Map<string, ItemRow>(items.filter((i) => i.sku !== null).map((i) => [i.sku!, i]));

  const lines: Resolved['lines'] = [];
  req.materials.forEach((m, index) => {
    const field = `materials[${index}]`;
    const item = m.inventoryItemId != null ? byId.get(m.inventoryItemId) : bySku.get(m.sku!);
    if (!item) {
      if (m.inventoryItemId != null) add(`${field}.inventoryItemId`, 'No inventory item with this id.');
      else add(`${field}.sku`, 'No inventory item with this SKU.');
      return;
    }
    if (!sameUnit(m.unitOfMeasure, item.unitOfMeasure)) {
      add(
        `${field}.unitOfMeasure`,
        item.unitOfMeasure === null
          ? 'The item has no unit of measure; send null.'
          : `The item is counted in "${item.unitOfMeasure}"; send that unit (no conversion is made).`,
      );
      return;
    }
    lines.push({ itemId: item.id, quantity: m.quantity.toFixed(quantityDecimals), unitOfMeasure: item.unitOfMeasure });
  });

  if (Object.keys(errors).length > 0) {
    throw new AppError(
      'inventory_reference_invalid',
      "The request names an inventory location or item the tenant does not have, or a unit that is not the item's.",
      errors,
    );
  }
  return { locationId: location!.id, usedAt: new Date(req.usedAt).toISOString(), lines };
}

const toResponse = (dto: WorkOrderMaterialUsageDto, wasAlreadyProcessed: boolean): MaterialUsageResponse => ({
  materialUsageId: dto.materialUsageId,
  workOrderId: dto.workOrderId,
  externalWorkOrderId: dto.externalWorkOrderId,
  inventoryLocationId: dto.inventoryLocationId,
  usedAt: dto.usedAt,
  status: dto.status,
  materials: dto.materials,
  idempotency: { externalEventId: dto.externalEventId, wasAlreadyProcessed },
});

/**
 * Records a material usage at the edge (usage + lines, status Pending) and produces the
 * message that makes the materials worker book it, in one transaction that commits only after
 * Kafka acknowledged (recordThenProduce). Idempotent by (tenant, externalEventId): the same
 * content again answers the recorded usage and produces nothing; other content is a 409.
 */
export function recordMaterialUsage(
  deps: WriteDeps,
  client: AuthenticatedClient,
  ids: { requestId: string; correlationId: string },
  ref: WorkOrderRef,
  req: CreateMaterialUsageRequest,
): Promise<MaterialUsageResponse> {
  return recordThenProduce<MaterialUsageResponse>(deps, client.tenantId, async (tx) => {
    const workOrder = await resolveWorkOrder(tx, client.tenantId, ref);
    const resolved = await resolveReferences(tx, client.tenantId, req);
    // Normalised content: the same usage sent to either address, by item id or SKU, by
    // location id or code, with any offset on usedAt, hashes the same.
    const hash = contentFingerprint({ workOrderId: workOrder.id, ...resolved });
    const usageId = randomUUID();
    const inserted = await insertUsage(tx, {
      id: usageId,
      tenantId: client.tenantId,
      clientId: client.clientId,
      workOrderId: workOrder.id,
      externalEventId: req.externalEventId,
      requestHash: hash,
      ...resolved,
    });
    if (!inserted) {
      const existing = (await findUsageByEvent(tx, client.tenantId, req.externalEventId))!;
      if (!existing.requestHash.equals(hash)) {
        throw new AppError(
          'idempotency_conflict',
          'This externalEventId was already used with different content; use a new externalEventId for a new usage.',
          null,
          { materialUsageId: existing.id, workOrderId: existing.workOrderId },
        );
      }
      const [recorded] = await loadUsages(tx, client.tenantId, { usageId: existing.id });
      return { result: toResponse(recorded!, true) };
    }
    const [recorded] = await loadUsages(tx, client.tenantId, { usageId });
    const payload: UsagePayload = {
      materialUsageId: usageId,
      workOrderId: workOrder.id,
      externalEventId: req.externalEventId,
    };
    const meta = { tenantId: client.tenantId, clientId: client.clientId, ...ids };
    return {
      result: toResponse(recorded!, false),
      produce: {
        topic: topicNames(deps.config.kafka).workOrderMaterials,
        recordId: usageId,
        messages: [jsonMessage(String(workOrder.id), envelope(usageMessageType, usageMessageVersion, meta, payload))],
      },
    };
  });
}

/** GET: the work order's usages, Pending ones included (read-your-writes). */
export async function listMaterialUsages(
  pool: TenantPool,
  tenantId: string,
  ref: WorkOrderRef,
): Promise<WorkOrderMaterialUsageDto[]> {
  return pool.run(tenantId, async (tx) => {
    const workOrder = await resolveWorkOrder(tx, tenantId, ref);
    return loadUsages(tx, tenantId, { workOrderId: workOrder.id });
  });
}
