// Runs suggestRoutes in a worker thread so a 2,000-target draft (seconds of CPU) does not stall
// the caller's event loop. One short-lived worker per call: no pool to size, drain or leak.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { RouteInputError } from './errors.js';
import type { WorkerReply } from './routing-worker.js';
import type { RouteSuggestionInput, RouteSuggestionResult } from './types.js';

/** Compiled JS next to this module in dist; the .ts source under tsx/vitest, loaded through tsx. */
function workerScript(): { url: URL; execArgv: string[] } {
  const js = new URL('./routing-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return { url: js, execArgv: [] };
  // Resolved from here, not from the process's working directory as a bare '--import tsx' would be.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { url: new URL('./routing-worker.ts', import.meta.url), execArgv: ['--import', tsx] };
}

/** Rejects with RouteInputError for bad input (as suggestRoutes throws it), AbortError on abort. */
export function runRouteSuggestionInWorker(
  input: RouteSuggestionInput,
  options: { signal?: AbortSignal } = {},
): Promise<RouteSuggestionResult> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const { url, execArgv } = workerScript();
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, { workerData: input, execArgv });
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const onAbort = (): void => {
      settle(() => reject(signal?.reason));
      void worker.terminate();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (reply: WorkerReply) =>
      settle(() => {
        if (reply.ok) resolve(reply.result);
        else if (reply.error.name === 'RouteInputError') reject(new RouteInputError(reply.error.message));
        else reject(new Error(`route suggestion failed: ${reply.error.name}: ${reply.error.message}`));
      }),
    );
    worker.once('error', (e) => settle(() => reject(e)));
    worker.once('exit', (code) => settle(() => reject(new Error(`route suggestion worker exited with code ${code}`))));
  });
}
