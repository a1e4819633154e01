// The routing engine's public surface.
export { RouteInputError } from './errors.js';
export type { DraftAnswer, DraftDocument } from './draft-document.js';
export { defaultServiceMinutes, type ImportedDraftInput } from './imported-draft.js';
export { isTimeZone } from './local-windows.js';
export { checkTargetCount, defaultAverageSpeedKmh, maxTargets } from './problem.js';
export { runRouteSuggestionInWorker } from './run-in-worker.js';
export type * from './types.js';
