import { recordAppointmentStatusChanged } from '../webhooks/events.js';
import type { PoolClient } from '../db/pool.js';
import type { AppointmentStatus, TransitionActor } from './statuses.js';

// Status changes of appointment requests, used by the gateway (submit, cancel), the worker and
// the admin CLI. Every change locks the request row first (lockRequest), so history sequence
// numbers are assigned one at a time per request.

/** The row, locked; tenant/client conditions are the caller's. */
export const lockRequestSql = (where: string) =>
  `SELECT id, tenant_id, client_id, status, request, cancelled_at, cancel_idempotency_key, cancel_request_hash,
          cancel_reason, cancelled_by
     FROM appointment_requests WHERE ${where} FOR UPDATE`;

/** Appends one history entry; `at` is the statement's clock time so entries of one transaction stay ordered. */
export async function appendHistory(
  tx: PoolClient,
  entry: {
    id: string;
    from: AppointmentStatus | null;
    to: AppointmentStatus;
    reason: string | null;
    actor: TransitionActor;
    at?: Date;
  },
): Promise<Date> {
  const { rows } = await tx.query(
    `INSERT INTO appointment_status_history (appointment_request_id, tenant_id, seq, from_status, to_status, reason, actor, at)
     SELECT $1, (SELECT tenant_id FROM appointment_requests WHERE id = $1), coalesce(max(seq), 0) + 1, $2, $3, $4, $5,
            coalesce($6::timestamptz, date_trunc('milliseconds', clock_timestamp()))
       FROM appointment_status_history WHERE appointment_request_id = $1
     RETURNING at`,
    [entry.id, entry.from, entry.to, entry.reason, entry.actor, entry.at ?? null],
  );
  // Every status change (worker, back office, client cancel) passes here: its webhook event
  // commits with it.
  await recordAppointmentStatusChanged(tx, { ...entry, at: rows[0].at });
  return rows[0].at as Date;
}

/**
 * One transition: moves the status only if it is still `from` (the caller holds the row lock),
 * plus its history entry; null when the status was not `from`.
 */
export async function transition(
  tx: PoolClient,
  t: { id: string; from: AppointmentStatus; to: AppointmentStatus; reason: string | null; actor: TransitionActor },
): Promise<Date | null> {
  const { rowCount } = await tx.query(
    `UPDATE appointment_requests SET status = $3, status_reason = $4, updated_at = date_trunc('milliseconds', clock_timestamp())
      WHERE id = $1 AND status = $2`,
    [t.id, t.from, t.to, t.reason],
  );
  if (rowCount !== 1) return null;
  return appendHistory(tx, t);
}
