// Runs a whole draft (suggestImportedDraft: window conversion and routing, then its document's
// JSON text) in a worker thread so a 5,000-target draft (seconds of CPU) does not stall the
// caller's event loop, neither while it computes nor when it answers.
import { availableParallelism } from 'node:os';
import { threadPool, type ThreadPool } from '../shared/threads.js';
import { RouteInputError } from './errors.js';
import type { DraftAnswer } from './draft-document.js';
import type { ImportedDraftInput } from './imported-draft.js';

/** Drafts beyond one per core wait for a thread (their budget's clock running). Threads are
 *  stopped when idle, so a process that computes no draft holds none. */
let pool: ThreadPool | undefined;

/** Rejects with RouteInputError for bad input (as suggestRoutes throws it), the signal's reason
 *  on abort (the thread computing it is terminated). */
export function runRouteSuggestionInWorker(
  input: ImportedDraftInput,
  options: { signal?: AbortSignal } = {},
): Promise<DraftAnswer> {
  pool ??= threadPool({
    task: new URL('./routing-worker.js', import.meta.url),
    maxThreads: availableParallelism(),
    idleTimeoutMs: 10_000,
    errorClasses: [RouteInputError],
  });
  if (options.signal?.aborted) return Promise.reject(options.signal.reason);
  return pool.run<DraftAnswer>(input, options);
}
