import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, type Http } from './http.js';
import type { RejectLine } from './outcome.js';

const finalStatuses = new Set(['Completed', 'CompletedWithErrors', 'Failed']);

/** What a run remembers of each import job it created, to report the workers' failures by input line. */
export type SentJob = { importJobId: number; lines: number[]; rejectedIndexes: Set<number> };

type JobAnswer = {
  status: string;
  counts: { applied: number; failed: number };
  errors: { index: number; externalId: string | null; field: string | null; message: string }[];
  failureReason: string | null;
};

export type WaitResult = { applied: number; failed: number; failures: RejectLine[] };

/**
 * Polls the import jobs one after another (oldest first, as the workers roughly finish them) until
 * each is final: one request in flight, so waiting never spends the client's rate limit.
 * Targets the workers could not apply are returned as rejects (their errors beyond the edge's).
 */
export async function waitForJobs(
  http: Http,
  jobs: readonly SentJob[],
  onProgress: (counts: { done: number; applied: number; failed: number }) => void,
  signal: AbortSignal,
  pollMs = 500,
): Promise<WaitResult> {
  const result: WaitResult = { applied: 0, failed: 0, failures: [] };
  for (const [done, job] of jobs.entries()) {
    for (;;) {
      const res = await http.request('GET', `/api/v1/import-jobs/${job.importJobId}`);
      if (res.status !== 200)
        throw new Error(`GET import job ${job.importJobId}: ${res.status} ${errorMessage(res.body)}`);
      const answer = res.body as JobAnswer;
      if (finalStatuses.has(answer.status)) {
        result.applied += answer.counts.applied;
        result.failed += answer.counts.failed;
        for (const e of answer.errors) {
          if (job.rejectedIndexes.has(e.index)) continue;
          result.failures.push({
            line: job.lines[e.index] ?? 0,
            externalId: e.externalId,
            importJobId: job.importJobId,
            reasons: [{ field: e.field, message: `not applied: ${e.message}` }],
          });
        }
        if (answer.status === 'Failed' && answer.errors.length === 0 && answer.failureReason)
          result.failures.push({
            line: job.lines[0] ?? 0,
            externalId: null,
            importJobId: job.importJobId,
            reasons: [{ field: null, message: `import job failed: ${answer.failureReason}` }],
          });
        break;
      }
      await sleep(pollMs, undefined, { signal });
    }
    onProgress({ done: done + 1, applied: result.applied, failed: result.failed });
  }
  return result;
}
