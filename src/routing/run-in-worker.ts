// Runs a whole draft (suggestImportedDraft: window conversion and routing, then its document's
// JSON text) in a worker thread so a 5,000-target draft (seconds of CPU) does not stall the
// caller's event loop, neither while it computes nor when it answers. One short-lived
// worker per call: no pool to size, drain or leak.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { RouteInputError } from './errors.js';
import type { DraftAnswer } from './draft-document.js';
import type { ImportedDraftInput } from './imported-draft.js';
import type { WorkerReply } from './routing-worker.js';

/** The compiled worker next to this module (dist). From the .ts sources (tsx, vitest) the worker
 *  must load TypeScript, and Node 20 ignores loader flags in a Worker's execArgv
 *  (nodejs/node#47747): a tiny bootstrap registers tsx inside the worker, then imports the .ts. */
function workerScript(): { script: string | URL; eval: boolean } {
  const js = new URL('./routing-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return { script: js, eval: false };
  const ts = new URL('./routing-worker.ts', import.meta.url).href;
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const script = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(ts)}); });`;
  return { script, eval: true };
}

/** Rejects with RouteInputError for bad input (as suggestRoutes throws it), the signal's reason
 *  on abort (the worker is terminated). */
export function runRouteSuggestionInWorker(
  input: ImportedDraftInput,
  options: { signal?: AbortSignal } = {},
): Promise<DraftAnswer> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const { script, eval: evaluate } = workerScript();
  return new Promise((resolve, reject) => {
    const worker = new Worker(script, { eval: evaluate, workerData: input });
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
        if (reply.ok) resolve(reply.answer);
        else if (reply.error.name === 'RouteInputError') reject(new RouteInputError(reply.error.message));
        else reject(new Error(`route suggestion failed: ${reply.error.name}: ${reply.error.message}`));
      }),
    );
    worker.once('error', (e) => settle(() => reject(e)));
    worker.once('exit', (code) => settle(() => reject(new Error(`route suggestion worker exited with code ${code}`))));
  });
}
