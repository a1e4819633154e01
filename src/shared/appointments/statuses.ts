// The appointment request lifecycle (spec part 3, the transitions it leaves open designed here).
// One table says who may move a request from which status to which; the gateway (cancel), the
// appointments worker and the admin CLI (back office) all check against it.
//
//   Submitted ──system──▶ Validated ──system──▶ PendingReview ──back office──▶ Accepted ──▶ Scheduled
//       │                                            │                          │            │
//       ├─system─▶ Rejected (business rules)         └──back office──▶ Rejected ◀┘            ▼
//       └─system─▶ Failed (dead-lettered)                                 Assigned ◀──▶ Scheduled
//                                                                            │
//                                                      InProgress ◀──────────┘ ──▶ Completed
//   client cancel: from Submitted, Validated, PendingReview, Accepted, Scheduled, Assigned → Cancelled
//   final: Rejected, Completed, Cancelled, Failed

export const appointmentStatuses = [
  'Submitted',
  'Validated',
  'PendingReview',
  'Accepted',
  'Rejected',
  'Scheduled',
  'Assigned',
  'InProgress',
  'Completed',
  'Cancelled',
  'Failed',
] as const;
export type AppointmentStatus = (typeof appointmentStatuses)[number];

/** Who made a status change (recorded in the history). */
export const transitionActors = ['client', 'system', 'back-office'] as const;
export type TransitionActor = (typeof transitionActors)[number];

export const finalStatuses: readonly AppointmentStatus[] = ['Rejected', 'Completed', 'Cancelled', 'Failed'];

/** Statuses the client may cancel from; cancel elsewhere is a 409 invalid_state_transition. */
export const cancellableStatuses: readonly AppointmentStatus[] = [
  'Submitted',
  'Validated',
  'PendingReview',
  'Accepted',
  'Scheduled',
  'Assigned',
];

/** What the appointments worker does by itself. */
export const systemTransitions: Readonly<Partial<Record<AppointmentStatus, readonly AppointmentStatus[]>>> = {
  Submitted: ['Validated', 'Rejected', 'Failed'],
  Validated: ['PendingReview'],
};

/** What the back office does (admin CLI `appointment set-status`). */
export const backOfficeTransitions: Readonly<Partial<Record<AppointmentStatus, readonly AppointmentStatus[]>>> = {
  PendingReview: ['Accepted', 'Rejected'],
  Accepted: ['Scheduled', 'Rejected'],
  Scheduled: ['Assigned'],
  Assigned: ['InProgress', 'Scheduled'],
  InProgress: ['Completed'],
};

/** The statuses the back office sets (the admin CLI's --status values). */
export const backOfficeTargetStatuses = [
  ...new Set(Object.values(backOfficeTransitions).flatMap((to) => to ?? [])),
] as AppointmentStatus[];

/** Statuses whose history entry must say why. */
export const statusesNeedingReason: readonly AppointmentStatus[] = ['Rejected', 'Failed', 'Cancelled'];

export function mayTransition(actor: TransitionActor, from: AppointmentStatus, to: AppointmentStatus): boolean {
  if (actor === 'client') return to === 'Cancelled' && cancellableStatuses.includes(from);
  const table = actor === 'system' ? systemTransitions : backOfficeTransitions;
  return table[from]?.includes(to) ?? false;
}
