import { targetItemSchema } from '../shared/inbound/target-schema.js';
import type { Batch } from './batches.js';
import { errorMessage, type Answer } from './http.js';

export type Reason = { field: string | null; message: string };
/** One line of the rejects file. */
export type RejectLine = {
  line: number;
  externalId: string | null;
  importJobId: number | null;
  reasons: Reason[];
  target?: unknown;
  raw?: string;
};

export type BatchOutcome = {
  accepted: number;
  rejected: RejectLine[];
  /** Targets the service did not take (the batch failed as a whole, e.g. still 503 after every retry). */
  undelivered: number;
  importJobId: number | null;
  replay: boolean;
  /** Why the batch was not taken, when it was not. */
  failure: string | null;
};

type ImportJobAnswer = {
  importJobId: number;
  idempotentReplay: boolean;
  counts: { accepted: number; rejected: number };
  errors: { index: number; field: string | null; message: string }[];
  errorsOmitted: number;
};

const externalIdOf = (target: unknown) => {
  const id = (target as { externalId?: unknown } | null)?.externalId;
  return typeof id === 'string' ? id : null;
};

/** The reasons the shared target schema gives (the service's own), for targets its answer left unlisted. */
function localReasons(target: unknown): Reason[] | null {
  const parsed = targetItemSchema.safeParse(target);
  if (parsed.success) return null;
  return parsed.error.issues.map((i) => ({ field: i.path.join('.') || null, message: i.message }));
}

/**
 * Rejected targets of one batch with their reasons. The service lists the first 100 item errors;
 * when it omitted some, the other rejected targets are found with the same schema here.
 */
function rejectsOf(
  batch: Batch,
  listed: Map<number, Reason[]>,
  rejectedCount: number,
  importJobId: number | null,
  fallback: string,
): RejectLine[] {
  const complete = listed.size >= rejectedCount;
  const out: RejectLine[] = [];
  const found = new Set<number>();
  const add = (index: number, reasons: Reason[]) => {
    const target = batch.targets[index];
    out.push({ line: batch.lines[index]!, externalId: externalIdOf(target), importJobId, reasons, target });
    found.add(index);
  };
  batch.targets.forEach((target, index) => {
    const reasons = listed.get(index) ?? (complete ? null : localReasons(target));
    if (reasons) add(index, reasons);
  });
  // Rejected, yet neither listed nor invalid here (e.g. text PostgreSQL cannot store): say so.
  for (let i = 0; out.length < rejectedCount && i < batch.targets.length; i++)
    if (!found.has(i)) add(i, [{ field: null, message: fallback }]);
  return out.sort((a, b) => a.line - b.line);
}

/** What the service's answer to a batch means for each of its targets. */
export function outcomeOf(batch: Batch, answer: Answer): BatchOutcome {
  const none = { accepted: 0, undelivered: 0, importJobId: null, replay: false, failure: null };
  if (answer.status === 200) {
    const job = answer.body as ImportJobAnswer;
    const listed = new Map<number, Reason[]>();
    for (const e of job.errors)
      listed.set(e.index, [...(listed.get(e.index) ?? []), { field: e.field, message: e.message }]);
    return {
      ...none,
      accepted: job.counts.accepted,
      importJobId: job.importJobId,
      replay: job.idempotentReplay,
      rejected:
        job.counts.rejected > 0
          ? rejectsOf(batch, listed, job.counts.rejected, job.importJobId, 'rejected by the service')
          : [],
    };
  }
  if (answer.status === 400) {
    // No valid target in the batch (or an envelope the service refused): every target is rejected.
    const fieldErrors =
      (answer.body as { error?: { fieldErrors?: Record<string, string[]> | null } }).error?.fieldErrors ?? {};
    const listed = new Map<number, Reason[]>();
    for (const [path, messages] of Object.entries(fieldErrors)) {
      const m = /^targets\[(\d+)\](?:\.(.+))?$/.exec(path);
      if (!m) continue;
      const index = Number(m[1]);
      listed.set(index, [
        ...(listed.get(index) ?? []),
        ...messages.map((message) => ({ field: m[2] ?? null, message })),
      ]);
    }
    return { ...none, rejected: rejectsOf(batch, listed, batch.targets.length, null, errorMessage(answer.body)) };
  }
  return {
    ...none,
    rejected: [],
    undelivered: batch.targets.length,
    failure: `batch ${batch.index} (lines ${batch.lines[0]}–${batch.lines.at(-1)}): ${answer.status || 'no answer'} ${errorMessage(answer.body)}`,
  };
}
