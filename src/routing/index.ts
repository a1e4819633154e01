// The routing engine's public surface.
export { RouteInputError } from './errors.js';
export type { DraftAnswer, DraftDocument } from './draft-document.js';
export { haversineKm } from './geo.js';
export {
  defaultServiceMinutes,
  suggestImportedDraft,
  type ImportedDraftInput,
  type ImportedDraftResult,
  type ImportedTarget,
} from './imported-draft.js';
export { isTimeZone } from './local-windows.js';
export { nearestNeighbourRoutes } from './nearest-neighbour.js';
export { checkTargetCount, maxTargets } from './problem.js';
export { runRouteSuggestionInWorker } from './run-in-worker.js';
export { suggestRoutes } from './suggest.js';
export type * from './types.js';
