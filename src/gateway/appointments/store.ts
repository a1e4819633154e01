import type { TenantTx } from '../../shared/db/tenant-scope.js';
import type { StoredAppointmentRequest } from '../../shared/appointments/request-schema.js';
import type { AppointmentRecordDto } from './schemas.js';
import { iso } from '../../shared/iso-time.js';

// SQL of the appointment endpoints. A request belongs to the client that submitted it: every
// read and write names both the id and the client (another client's id is simply not found).

export const recordColumns = `id, request, status, status_reason, cancel_reason, cancelled_by, cancelled_at,
  created_at, updated_at`;

export function toRecordDto(r: Record<string, any>): AppointmentRecordDto {
  const request = r.request as StoredAppointmentRequest;
  return {
    id: r.id,
    ...request,
    status: r.status,
    statusReason: r.status_reason,
    cancellation: r.cancelled_at
      ? { reason: r.cancel_reason, cancelledBy: r.cancelled_by, cancelledAt: iso(r.cancelled_at) }
      : null,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

export type NewAppointmentRequest = {
  id: string;
  tenantId: string;
  clientId: string;
  request: StoredAppointmentRequest;
  requestHash: Buffer;
};

/**
 * Inserts the request, or returns null when the client already has one with this
 * externalReference (a concurrent insert of the same reference waits here for the other to end).
 */
export async function insertRequest(tx: TenantTx, n: NewAppointmentRequest): Promise<Record<string, any> | null> {
  const { rows } = await tx.query(
    `INSERT INTO appointment_requests (id, tenant_id, client_id, external_reference, service_type, priority, request,
                                       request_hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (client_id, external_reference) DO NOTHING
     RETURNING ${recordColumns}`,
    [
      n.id,
      n.tenantId,
      n.clientId,
      n.request.externalReference,
      n.request.serviceType,
      n.request.priority,
      JSON.stringify(n.request),
      n.requestHash,
    ],
  );
  return rows[0] ?? null;
}

export async function findByExternalReference(
  tx: TenantTx,
  clientId: string,
  externalReference: string,
): Promise<(Record<string, any> & { request_hash: Buffer }) | null> {
  const { rows } = await tx.query(
    `SELECT ${recordColumns}, request_hash FROM appointment_requests WHERE client_id = $1 AND external_reference = $2`,
    [clientId, externalReference],
  );
  return rows[0] ?? null;
}

export async function findRequest(tx: TenantTx, clientId: string, id: string): Promise<AppointmentRecordDto | null> {
  const { rows } = await tx.query(
    `SELECT ${recordColumns} FROM appointment_requests WHERE id = $1 AND client_id = $2`,
    [id, clientId],
  );
  return rows[0] ? toRecordDto(rows[0]) : null;
}

export type StatusView = {
  id: string;
  status: string;
  history: { status: string; enteredAt: string; reason: string | null; actor: string }[];
};

export async function findStatus(tx: TenantTx, clientId: string, id: string): Promise<StatusView | null> {
  // One statement: the status and the history are read from one snapshot.
  const { rows } = await tx.query(
    `SELECT r.status, h.to_status, h.at, h.reason, h.actor
       FROM appointment_requests r
       JOIN appointment_status_history h ON h.appointment_request_id = r.id
      WHERE r.id = $1 AND r.client_id = $2
      ORDER BY h.seq`,
    [id, clientId],
  );
  if (rows.length === 0) return null;
  return {
    id,
    status: rows[0].status,
    history: rows.map((h) => ({ status: h.to_status, enteredAt: iso(h.at), reason: h.reason, actor: h.actor })),
  };
}

/** The client's request that a cancel Idempotency-Key was used for, if any. */
export async function requestOfCancelKey(tx: TenantTx, clientId: string, key: string): Promise<string | null> {
  const { rows } = await tx.query(
    'SELECT id FROM appointment_requests WHERE client_id = $1 AND cancel_idempotency_key = $2',
    [clientId, key],
  );
  return rows[0]?.id ?? null;
}

/** Cancels (the caller holds the row lock and checked the status); returns cancelledAt. */
export async function markCancelled(
  tx: TenantTx,
  c: { id: string; reason: string; cancelledBy: string; idempotencyKey: string; requestHash: Buffer },
): Promise<Date> {
  const { rows } = await tx.query(
    `UPDATE appointment_requests
        SET status = 'Cancelled', status_reason = $2, cancel_reason = $2, cancelled_by = $3,
            cancelled_at = date_trunc('milliseconds', clock_timestamp()), cancel_idempotency_key = $4,
            cancel_request_hash = $5, updated_at = date_trunc('milliseconds', clock_timestamp())
      WHERE id = $1
      RETURNING cancelled_at`,
    [c.id, c.reason, c.cancelledBy, c.idempotencyKey, c.requestHash],
  );
  return rows[0].cancelled_at as Date;
}
