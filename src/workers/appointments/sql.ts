import { lockRequestSql } from '../../shared/appointments/transitions-sql.js';

// Statements of the appointments worker, kept apart from the logic (the transition statements
// themselves are shared with the gateway and the admin CLI: shared/appointments/transitions-sql.ts).

/** The request a message names, locked: the worker and a concurrent cancel take turns. */
export const lockSubmittedRequest = lockRequestSql('id = $1 AND tenant_id = $2');
