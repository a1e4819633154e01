import { appointmentIdPattern } from '../../shared/appointments/ids.js';
import {
  backOfficeTargetStatuses,
  backOfficeTransitions,
  mayTransition,
  statusesNeedingReason,
  type AppointmentStatus,
} from '../../shared/appointments/statuses.js';
import { lockRequestSql, transition } from '../../shared/appointments/transitions-sql.js';
import { inTransaction } from '../../shared/db/pool.js';
import { AdminError, parseOptions, required } from '../args.js';
import type { Command } from '../command.js';

type SetStatusInput = { id: string; status: AppointmentStatus; reason: string | null };

/** The back office's moves of an appointment request (the transitions the worker and the client do not make). */
export const appointmentSetStatus: Command<SetStatusInput> = {
  name: 'appointment set-status',
  synopsis: `--id <apr_…> --status <${backOfficeTargetStatuses.join('|')}> [--reason <text>]`,
  summary:
    'Back office: move an appointment request along its lifecycle (PendingReview → Accepted|Rejected, Accepted → ' +
    'Scheduled|Rejected, Scheduled → Assigned, Assigned → InProgress|Scheduled, InProgress → Completed); ' +
    '--reason is required for Rejected.',
  parse(args) {
    const v = parseOptions(args, { id: { type: 'string' }, status: { type: 'string' }, reason: { type: 'string' } });
    const id = required(v.id, 'id').trim();
    if (!appointmentIdPattern.test(id))
      throw new AdminError(`--id must be an appointment request id (apr_…), got ${JSON.stringify(id)}`);
    const status = required(v.status, 'status') as AppointmentStatus;
    if (!backOfficeTargetStatuses.includes(status)) {
      throw new AdminError(
        `--status must be one of ${backOfficeTargetStatuses.join(', ')}, got ${JSON.stringify(v.status)}`,
      );
    }
    const reason = v.reason?.trim() ? v.reason.trim().slice(0, 1000) : null;
    if (statusesNeedingReason.includes(status) && reason === null) {
      throw new AdminError(`--reason is required for ${status}`);
    }
    return { id, status, reason };
  },
  run: ({ pool }, { id, status, reason }) =>
    inTransaction(pool, async (tx) => {
      const row = (await tx.query(lockRequestSql('id = $1'), [id])).rows[0];
      if (!row) throw new AdminError(`appointment request ${id} not found`);
      const from = row.status as AppointmentStatus;
      if (!mayTransition('back-office', from, status)) {
        const allowed = backOfficeTransitions[from] ?? [];
        throw new AdminError(
          `appointment request ${id} is ${from}: the back office cannot move it to ${status}` +
            (allowed.length > 0 ? ` (from ${from}: ${allowed.join(', ')})` : ` (no back-office move from ${from})`),
        );
      }
      const at = await transition(tx, { id, from, to: status, reason, actor: 'back-office' });
      return { id, previousStatus: from, status, reason, at: at!.toISOString() };
    }),
};
