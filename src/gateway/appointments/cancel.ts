import { cancellableStatuses, type AppointmentStatus } from '../../shared/appointments/statuses.js';
import { appendHistory, lockRequestSql } from '../../shared/appointments/transitions-sql.js';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import { AppError, notFound } from '../../shared/errors.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { contentFingerprint } from '../http/fingerprint.js';
import { markCancelled, requestOfCancelKey } from './store.js';

export type CancelBody = { reason: string; cancelledBy: string };
export type CancelResult = { body: { id: string; status: 'Cancelled'; cancelledAt: string }; replayed: boolean };

const idempotencyConflict = (message: string, details: Record<string, unknown> | null) =>
  new AppError('idempotency_conflict', message, null, details);

/**
 * Cancels synchronously in PostgreSQL under the request's row lock (the worker's transitions
 * take the same lock and apply only from the status they expect, so neither overwrites the other).
 *   - same Idempotency-Key, same body → the first answer again (same cancelledAt), 200;
 *   - same key, different body, or the key used for another request → 409 idempotency_conflict;
 *   - already Cancelled under another key → 409 already_cancelled (details.cancelledAt);
 *   - a status that does not allow cancel → 409 invalid_state_transition.
 */
export function cancelAppointmentRequest(
  deps: { tenantPool: TenantPool },
  client: AuthenticatedClient,
  id: string,
  idempotencyKey: string,
  body: CancelBody,
): Promise<CancelResult> {
  const requestHash = contentFingerprint(body);
  // Nothing to produce: a plain transaction off the edge pool, so a Kafka outage never touches it.
  return deps.tenantPool.transaction<CancelResult>(client.tenantId, async (tx) => {
    const row = (await tx.query(lockRequestSql('id = $1 AND client_id = $2'), [id, client.clientId])).rows[0];
    if (!row) throw notFound(`Appointment request ${id}`);
    const answer = (cancelledAt: Date) => ({
      id,
      status: 'Cancelled' as const,
      cancelledAt: cancelledAt.toISOString(),
    });

    if (row.cancel_idempotency_key === idempotencyKey) {
      if (!(row.cancel_request_hash as Buffer).equals(requestHash)) {
        throw idempotencyConflict(
          'This Idempotency-Key was already used to cancel this request with a different body.',
          { id },
        );
      }
      return { body: answer(row.cancelled_at), replayed: true };
    }
    const other = await requestOfCancelKey(tx, client.clientId, idempotencyKey);
    if (other !== null) {
      throw idempotencyConflict('This Idempotency-Key was already used to cancel another appointment request.', {
        id: other,
      });
    }
    const status = row.status as AppointmentStatus;
    if (status === 'Cancelled') {
      throw new AppError(
        'already_cancelled',
        'The appointment request was already cancelled (under another Idempotency-Key).',
        null,
        { id, cancelledAt: (row.cancelled_at as Date).toISOString() },
      );
    }
    if (!cancellableStatuses.includes(status)) {
      throw new AppError(
        'invalid_state_transition',
        `An appointment request in status ${status} cannot be cancelled.`,
        null,
        { id, status, cancellableFrom: cancellableStatuses },
      );
    }
    const cancelledAt = await markCancelled(tx, { id, ...body, idempotencyKey, requestHash }).catch((err) => {
      // A concurrent cancel of another request took this key first (unique per client).
      if ((err as { code?: string }).code === '23505') {
        throw idempotencyConflict('This Idempotency-Key was already used to cancel another appointment request.', null);
      }
      throw err;
    });
    await appendHistory(tx, {
      id,
      from: status,
      to: 'Cancelled',
      reason: body.reason,
      actor: 'client',
      at: cancelledAt,
    });
    return { body: answer(cancelledAt), replayed: false };
  });
}
