import type { StoredAppointmentRequest } from './request-schema.js';

// The business validation the appointments worker applies to a Submitted request (after the
// gateway's schema validation). A request that breaks a rule is Rejected with the reason; one
// that passes is Validated and handed to the back office (PendingReview). The rules depend on
// the time of validation, which is why they are not part of the submission schema:
//   1. every preferred time window must end after the time of validation;
//   2. every preferred time window must start within maxLeadDays of it;
//   3. an urgent request needs a contact phone number.
export const maxLeadDays = 365;

export type RuleOutcome = { ok: true } | { ok: false; reason: string };

export function checkBusinessRules(request: StoredAppointmentRequest, now: number): RuleOutcome {
  const windows = request.preferredTimeWindows;
  for (let i = 0; i < windows.length; i++) {
    const w = windows[i]!;
    if (Date.parse(w.end) <= now) {
      return { ok: false, reason: `preferredTimeWindows[${i}] ended before the request was validated (${w.end}).` };
    }
    if (Date.parse(w.start) > now + maxLeadDays * 86_400_000) {
      return {
        ok: false,
        reason: `preferredTimeWindows[${i}] starts more than ${maxLeadDays} days ahead (${w.start}).`,
      };
    }
  }
  if (request.priority === 'urgent' && !request.contact.phone) {
    return { ok: false, reason: 'An urgent request needs a contact phone number (contact.phone).' };
  }
  return { ok: true };
}
