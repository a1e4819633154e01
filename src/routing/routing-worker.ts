// Worker-thread entry: computes one suggestion from workerData and posts it back.
import { parentPort, workerData } from 'node:worker_threads';
import { suggestRoutes } from './suggest.js';
import type { RouteSuggestionInput } from './types.js';

export type WorkerReply =
  | { ok: true; result: ReturnType<typeof suggestRoutes> }
  | { ok: false; error: { name: string; message: string } };

let reply: WorkerReply;
try {
  reply = { ok: true, result: suggestRoutes(workerData as RouteSuggestionInput) };
} catch (e) {
  const error = e instanceof Error ? e : new Error(String(e));
  reply = { ok: false, error: { name: error.name, message: error.message } };
}
parentPort?.postMessage(reply);
