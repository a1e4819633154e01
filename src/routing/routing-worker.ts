// Worker-thread entry: computes one draft from workerData and posts it back as JSON text.
import { parentPort, workerData } from 'node:worker_threads';
import { startBulkThread } from '../shared/bulk-thread.js';
import { draftAnswer, type DraftAnswer } from './draft-document.js';
import { suggestImportedDraft, type ImportedDraftInput } from './imported-draft.js';

export type WorkerReply = { ok: true; answer: DraftAnswer } | { ok: false; error: { name: string; message: string } };

// Seconds of CPU: when cores are short, the gateway's event loop goes first.
startBulkThread('route-draft');
let reply: WorkerReply;
try {
  reply = { ok: true, answer: draftAnswer(suggestImportedDraft(workerData as ImportedDraftInput)) };
} catch (e) {
  const error = e instanceof Error ? e : new Error(String(e));
  reply = { ok: false, error: { name: error.name, message: error.message } };
}
parentPort?.postMessage(reply);
