// A route-draft thread's task (run-in-worker.ts): computes one draft and answers it as JSON text.
import { startBulkThread } from '../shared/bulk-thread.js';
import { threadTask } from '../shared/threads.js';
import { draftAnswer } from './draft-document.js';
import { suggestImportedDraft, type ImportedDraftInput } from './imported-draft.js';

// Seconds of CPU: when cores are short, the gateway's event loop goes first.
startBulkThread('route-draft');

export default threadTask((input: ImportedDraftInput) => draftAnswer(suggestImportedDraft(input)));
