// The computed part of a draft as the gateway stores and answers it, made in the routing worker:
// the gateway gets one JSON text (one copy across threads) instead of cloning, reshaping and
// serialising every stop on its event loop.
import type { ImportedDraftResult } from './imported-draft.js';
import type { RouteSuggestionResult, RouteStop, SuggestedRoute } from './types.js';

type DocumentStop = Omit<RouteStop, 'lat' | 'lon'> & { coordinates: { latitude: number; longitude: number } };

/** The stored draft (its `result` column) and the answer's members after its header. */
export type DraftDocument = {
  routes: (Omit<SuggestedRoute, 'stops'> & { stops: DocumentStop[] })[];
  unplaced: RouteSuggestionResult['unplaced'];
  totalDistanceKm: number;
  totalDurationMinutes: number;
  summary: { targets: number; placed: number; unplaced: number };
};

/** What the worker answers: the scalars the caller decides on, and the document as JSON text. */
export type DraftAnswer = { targets: number } & (
  { routable: false } | { routable: true; placed: number; documentJson: string }
);

export function draftDocument(result: { targets: number } & RouteSuggestionResult): DraftDocument {
  const routes = result.routes.map((r) => ({
    ...r,
    stops: r.stops.map(({ lat, lon, ...s }) => ({ ...s, coordinates: { latitude: lat, longitude: lon } })),
  }));
  const placed = routes.reduce((n, r) => n + r.stops.length, 0);
  return {
    routes,
    unplaced: result.unplaced,
    totalDistanceKm: result.totalDistanceKm,
    totalDurationMinutes: result.totalDurationMinutes,
    summary: { targets: result.targets, placed, unplaced: result.unplaced.length },
  };
}

export function draftAnswer(result: ImportedDraftResult): DraftAnswer {
  if (!result.routable) return { targets: result.targets, routable: false };
  const document = draftDocument(result);
  return {
    targets: result.targets,
    routable: true,
    placed: document.summary.placed,
    documentJson: JSON.stringify(document),
  };
}
