import { lockRequestSql } from '../../shared/appointments/transitions-sql.js';
import { countDuplicate, stampAssignments } from '../apply-stamp.js';

// Statements of the appointments worker, kept apart from the logic (the transition statements
// themselves are shared with the gateway and the admin CLI: shared/appointments/transitions-sql.ts).

/** The request a message names, locked: the worker and a concurrent cancel take turns. */
export const lockSubmittedRequest = lockRequestSql('id = $1 AND tenant_id = $2');

/** Notes how the request's message was handled ($2… its stamp), unless a delivery before did. */
export const stampRequest = `UPDATE appointment_requests SET ${stampAssignments(2)} WHERE id = $1 AND handled_at IS NULL`;

export const countDuplicateRequest = countDuplicate('appointment_requests', 'id');
