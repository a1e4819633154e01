// Worker-thread entry: computes one draft from workerData and posts it back.
import { parentPort, workerData } from 'node:worker_threads';
import { startBulkThread } from '../shared/bulk-thread.js';
import { suggestImportedDraft, type ImportedDraftInput, type ImportedDraftResult } from './imported-draft.js';

export type WorkerReply =
  { ok: true; result: ImportedDraftResult } | { ok: false; error: { name: string; message: string } };

// Seconds of CPU: when cores are short, the gateway's event loop goes first.
startBulkThread('route-draft');
let reply: WorkerReply;
try {
  reply = { ok: true, result: suggestImportedDraft(workerData as ImportedDraftInput) };
} catch (e) {
  const error = e instanceof Error ? e : new Error(String(e));
  reply = { ok: false, error: { name: error.name, message: error.message } };
}
parentPort?.postMessage(reply);
