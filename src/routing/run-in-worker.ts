// Runs a whole draft (suggestImportedDraft: window conversion and routing, then its document's
// JSON text) in a worker thread so a 5,000-target draft (seconds of CPU) does not stall the
// caller's event loop, neither while it computes nor when it answers.
import { threadPool, type ThreadPool } from '../shared/threads.js';
import { RouteInputError } from './errors.js';
import type { DraftAnswer } from './draft-document.js';
import type { ImportedDraftInput } from './imported-draft.js';

/** A thread per draft in flight, as many as the caller computes at once: the gateway bounds them
 *  (ROUTE_SUGGESTION_MAX_IN_FLIGHT, at most 64), so no draft waits for a thread while its budget
 *  runs. Threads start on demand and stop when idle: a process that computes no draft holds none. */
const maxThreads = 64;
let pool: ThreadPool | undefined;

/** Rejects with RouteInputError for bad input (as suggestRoutes throws it), the signal's reason
 *  on abort (the thread computing it is terminated). */
export function runRouteSuggestionInWorker(
  input: ImportedDraftInput,
  options: { signal?: AbortSignal } = {},
): Promise<DraftAnswer> {
  pool ??= threadPool({
    task: new URL('./routing-worker.js', import.meta.url),
    maxThreads,
    idleTimeoutMs: 10_000,
    errorClasses: [RouteInputError],
  });
  if (options.signal?.aborted) return Promise.reject(options.signal.reason);
  return pool.run<DraftAnswer>(input, options);
}
