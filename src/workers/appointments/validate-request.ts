import { checkBusinessRules } from '../../shared/appointments/business-rules.js';
import type { StoredAppointmentRequest } from '../../shared/appointments/request-schema.js';
import type { AppointmentStatus } from '../../shared/appointments/statuses.js';
import { stampValues } from '../apply-stamp.js';
import { edgeRecordOrWait } from '../edge-record.js';
import type { ApplyArgs, FailArgs } from '../worker-kind.js';
import type { SubmittedPayload } from '../../shared/appointments/submitted-message.js';
import { transition } from '../../shared/appointments/transitions-sql.js';
import { inTransaction } from '../../shared/db/pool.js';
import type { Envelope } from '../../shared/messages.js';
import { PermanentMessageError } from '../permanent-error.js';
import { countDuplicateRequest, lockSubmittedRequest, stampRequest } from './sql.js';

type Submitted = Envelope<SubmittedPayload>;
export type ValidationOutcome = 'pending-review' | 'rejected' | 'not-submitted' | 'orphan';

/**
 * The business rules are a pure function of the stored request and the time: whatever they throw
 * (a stored request they cannot read) throws again on every retry, so it is permanent.
 */
function judge(request: StoredAppointmentRequest, at: number): ReturnType<typeof checkBusinessRules> {
  try {
    return checkBusinessRules(request, at);
  } catch (err) {
    throw new PermanentMessageError(`the stored request is unusable: ${(err as Error).message}`);
  }
}

/**
 * Validates one Submitted request in one transaction under its row lock. Only a request still
 * Submitted is moved (a redelivered message, or a request the client cancelled meanwhile, is left
 * alone): Submitted → Validated → PendingReview, or Submitted → Rejected with the rule it broke.
 * A `replayed` dead letter (an operator sent it again) also takes a request its dead-lettering
 * made Failed: Failed → Validated → PendingReview, or Failed → Rejected (the only way out of
 * Failed; the status table keeps Failed final for everything else).
 */
export async function validateSubmitted(
  args: ApplyArgs & { message: Submitted; now?: () => number; replayed?: boolean },
): Promise<ValidationOutcome> {
  const { pool, message, wait, stamp, now = Date.now, replayed = false } = args;
  const id = message.payload.appointmentRequestId;
  return inTransaction(pool, async (tx) => {
    const row = await edgeRecordOrWait<Record<string, any>>(
      (await tx.query(lockSubmittedRequest, [id, message.tenantId])).rows[0],
      wait,
    );
    if (!row) return 'orphan';
    // Handled: how, unless a delivery before noted it (then this one is a duplicate).
    const handled = async (how: 'applied' | 'skipped') => {
      const stamped = await tx.query(stampRequest, [id, ...stampValues(stamp), how]);
      if (stamped.rowCount === 0) await tx.query(countDuplicateRequest, [id]);
    };
    const from: AppointmentStatus = row.status;
    if (from !== 'Submitted' && !(replayed && from === 'Failed')) {
      await handled('skipped');
      return 'not-submitted';
    }
    await handled('applied');
    const outcome = judge(row.request as StoredAppointmentRequest, now());
    if (!outcome.ok) {
      await transition(tx, { id, from, to: 'Rejected', reason: outcome.reason, actor: 'system' });
      return 'rejected';
    }
    await transition(tx, { id, from, to: 'Validated', reason: null, actor: 'system' });
    await transition(tx, { id, from: 'Validated', to: 'PendingReview', reason: null, actor: 'system' });
    return 'pending-review';
  });
}

/** A dead-lettered message: its request, if still Submitted, is Failed with the reason. */
export async function failSubmitted({
  pool,
  message,
  reason,
  stamp,
}: FailArgs & { message: Submitted }): Promise<boolean> {
  const id = message.payload.appointmentRequestId;
  return inTransaction(pool, async (tx) => {
    const row = (await tx.query(lockSubmittedRequest, [id, message.tenantId])).rows[0];
    if (!row || row.status !== 'Submitted') return false;
    if ((await transition(tx, { id, from: 'Submitted', to: 'Failed', reason, actor: 'system' })) === null) return false;
    await tx.query(stampRequest, [id, ...stampValues(stamp), 'dead_lettered']);
    return true;
  });
}
