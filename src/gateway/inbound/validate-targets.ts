import { AppError, type FieldErrors } from '../../shared/errors.js';
import { unstorableReason, type TextProblem } from '../http/storable.js';
import { maxStoredItemErrors, type ItemError } from '../../shared/inbound/import-job.js';
import { targetItemSchema, type TargetFields } from '../../shared/inbound/target-schema.js';
import { checkTarget } from './target-check.js';
import { fieldName, toFieldErrors } from '../http/validate.js';

export type ValidatedTargets = {
  accepted: { index: number; target: TargetFields }[];
  rejectedCount: number;
  /** The first maxStoredItemErrors item errors; the rest are counted. */
  errors: ItemError[];
  errorsOmitted: number;
};

/**
 * Partial acceptance: each target is validated on its own; valid ones are accepted, invalid
 * ones (schema violations, or text PostgreSQL could not store) are rejected with per-field
 * errors. A request with no valid target is a 400.
 */
export function validateTargets(
  items: readonly unknown[],
  unstorable: ReadonlyMap<number, TextProblem[]> = new Map(),
  /** target-check.ts's verdict on what it is sure of; `() => undefined` leaves every target to zod. */
  fast: (item: unknown) => TargetFields | undefined = checkTarget,
): ValidatedTargets {
  const out: ValidatedTargets = { accepted: [], rejectedCount: 0, errors: [], errorsOmitted: 0 };
  const fieldErrors: Record<string, string[]> = {};
  items.forEach((item, index) => {
    const textProblems = unstorable.get(index);
    const sure = textProblems ? undefined : fast(item);
    if (sure) {
      out.accepted.push({ index, target: sure });
      return;
    }
    const parsed = textProblems ? null : targetItemSchema.safeParse(item);
    if (parsed?.success) {
      out.accepted.push({ index, target: parsed.data });
      return;
    }
    out.rejectedCount++;
    const raw = (item as { externalId?: unknown } | null)?.externalId;
    const externalId = typeof raw === 'string' && !unstorableReason(raw) ? raw : null;
    const problems: FieldErrors = textProblems
      ? Object.fromEntries(textProblems.map((p) => [fieldName(p.path), [p.message]]))
      : toFieldErrors(parsed!.error, '');
    for (const [field, messages] of Object.entries(problems)) {
      for (const message of messages) {
        if (out.errors.length < maxStoredItemErrors)
          out.errors.push({ index, externalId, field: field || null, message });
        else out.errorsOmitted++;
        const path = field ? `targets${fieldName([index])}.${field}` : `targets${fieldName([index])}`;
        if (Object.keys(fieldErrors).length < maxStoredItemErrors) (fieldErrors[path] ??= []).push(message);
      }
    }
  });
  if (out.accepted.length === 0) {
    throw new AppError('validation_failed', 'No target in the request is valid; nothing was accepted.', fieldErrors, {
      rejected: out.rejectedCount,
    });
  }
  return out;
}
