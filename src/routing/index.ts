// The routing engine's public surface.
export { RouteInputError } from './errors.js';
export { haversineKm } from './geo.js';
export { nearestNeighbourRoutes } from './nearest-neighbour.js';
export { runRouteSuggestionInWorker } from './run-in-worker.js';
export { suggestRoutes } from './suggest.js';
export type * from './types.js';
