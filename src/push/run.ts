import { cutBatches, type Batch } from './batches.js';
import { createHttp, errorMessage, FatalError, type Http } from './http.js';
import { batchPath, readBatchLimits, type BatchLimits } from './limits.js';
import { outcomeOf } from './outcome.js';
import type { PushOptions } from './options.js';
import { createProgress, describePush, describeWait, type Counts } from './progress.js';
import { countRecords, openInput, readRecords } from './read-records.js';
import { openRejectsFile } from './rejects-file.js';
import { waitForJobs, type SentJob, type WaitResult } from './wait-jobs.js';

export type PushSummary = Counts & {
  limits: BatchLimits;
  batches: number;
  /** Batches the service answered with an import job of an earlier run (same key, same body). */
  replayedBatches: number;
  importJobs: number;
  /** Requests sent again, by why: the status (429, 503, …) or "no answer". */
  retries: Record<string, number>;
  /** Why batches were not taken. */
  failures: string[];
  rejectsPath: string;
  rejectsWritten: number;
  waited: WaitResult | null;
  seconds: number;
};

/** Whether the run reached its goal: everything accepted, and applied when waited for. */
export const succeeded = (s: PushSummary) =>
  s.rejected === 0 && s.undelivered === 0 && (s.waited === null || s.waited.failed === 0);

/**
 * Reads the input, cuts it into batches within the documented limits, sends at most
 * `concurrency` batches at once, writes the rejects and, with --wait, follows the import jobs.
 */
export async function push(options: PushOptions, signal: AbortSignal): Promise<PushSummary> {
  const started = Date.now();
  const http = createHttp(options.baseUrl, options.apiKey, signal);
  const { used: limits } = await readBatchLimits(http, options);
  if (options.wait) await checkCanWait(http);
  const total = await countRecords(options.input, options.format);
  const rejects = openRejectsFile(options.rejectsPath);
  const progress = createProgress(options.progress, total, describePush(total));
  const counts: Counts = { done: 0, sent: 0, accepted: 0, rejected: 0, undelivered: 0 };
  const summary = { batches: 0, replayedBatches: 0, failures: [] as string[] };
  const jobs: SentJob[] = [];

  async function send(batch: Batch) {
    const answer = await http.request('POST', batchPath, {
      body: batch.body,
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': batch.idempotencyKey },
    });
    const outcome = outcomeOf(batch, answer);
    for (const line of outcome.rejected) await rejects.write(line);
    counts.done += batch.targets.length;
    counts.accepted += outcome.accepted;
    counts.rejected += outcome.rejected.length;
    counts.undelivered += outcome.undelivered;
    if (outcome.undelivered === 0) counts.sent += batch.targets.length;
    if (outcome.replay) summary.replayedBatches++;
    if (outcome.failure) {
      summary.failures.push(outcome.failure);
      progress.note(outcome.failure);
    }
    if (outcome.importJobId !== null) {
      const indexOfLine = new Map(batch.lines.map((line, index) => [line, index]));
      const rejectedIndexes = new Set(outcome.rejected.map((r) => indexOfLine.get(r.line)!));
      jobs.push({ importJobId: outcome.importJobId, lines: batch.lines, rejectedIndexes });
    }
    progress.update(counts);
  }

  const inFlight = new Set<Promise<void>>();
  let firstError: unknown = null;
  try {
    for await (const item of cutBatches(
      readRecords(openInput(options.input), options.format),
      options.sourceSystem,
      limits,
    )) {
      if (firstError) break;
      if ('reject' in item) {
        const { line, error, target, raw } = item.reject;
        await rejects.write({
          line,
          externalId: null,
          importJobId: null,
          reasons: [{ field: null, message: error }],
          target,
          raw,
        });
        counts.done++;
        counts.rejected++;
        progress.update(counts);
        continue;
      }
      summary.batches++;
      const sending: Promise<void> = send(item.batch)
        .catch((err: unknown) => {
          firstError ??= err;
        })
        .finally(() => inFlight.delete(sending));
      inFlight.add(sending);
      if (inFlight.size >= options.concurrency) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    if (firstError) throw stoppedAfter(firstError, counts.accepted);
  } finally {
    progress.stop();
  }

  let waited: WaitResult | null = null;
  if (options.wait && jobs.length > 0) {
    jobs.sort((a, b) => a.importJobId - b.importJobId);
    const waiting = createProgress(options.progress, jobs.length, describeWait(jobs.length));
    waiting.note(`waiting for ${jobs.length} import jobs to finish`);
    waited = await waitForJobs(http, jobs, (counts) => waiting.update(counts), signal);
    waiting.stop();
    for (const failure of waited.failures) await rejects.write(failure);
  }
  await rejects.close();
  return {
    ...counts,
    ...summary,
    limits,
    importJobs: new Set(jobs.map((j) => j.importJobId)).size,
    retries: http.retries(),
    rejectsPath: options.rejectsPath,
    rejectsWritten: rejects.count(),
    waited,
    seconds: (Date.now() - started) / 1000,
  };
}

/**
 * --wait reads the import jobs (scope import_jobs.read): a key without it would upload everything
 * and then fail to follow a single job, so ask once before sending anything (401/403 end the run).
 */
async function checkCanWait(http: Http) {
  const res = await http.request('GET', '/api/v1/import-jobs?take=1');
  if (res.status !== 200)
    throw new FatalError(`--wait: GET /api/v1/import-jobs answered ${res.status} ${errorMessage(res.body)}`);
}

/** A refusal after some batches were taken (e.g. the key revoked midway) says how many were. */
function stoppedAfter(err: unknown, accepted: number): unknown {
  if (!(err instanceof FatalError) || accepted === 0) return err;
  return new FatalError(
    `${err.message}; ${accepted.toLocaleString('en-US')} targets were accepted before that ` +
      '(run the same command again with a key that may: nothing is sent twice)',
  );
}
