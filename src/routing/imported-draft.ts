// A draft from an import job's targets as stored (windows as instants), computed whole in the
// routing worker: parsing, converting every window to the day's local clock and routing all run
// off the gateway's event loop, inside the draft's budget.
import { windowsOnDay } from './local-windows.js';
import { checkTargetCount } from './problem.js';
import { suggestRoutes } from './suggest.js';
import type { RouteSuggestionInput, RouteSuggestionResult, RouteTarget, UnplacedTarget } from './types.js';

/** Service minutes of a target that gives none. */
export const defaultServiceMinutes = 15;
/** Priority of a target that gives none (the middle of 1–5). */
const defaultPriority = 3;

/** A stored target: windows are ISO 8601 instants with offset, on any day. */
export type ImportedTarget = {
  externalId: string;
  lat: number | null;
  lon: number | null;
  serviceMinutes: number | null;
  priority: number | null;
  timeWindows: { start: string; end: string }[];
};

export type ImportedDraftInput = Omit<RouteSuggestionInput, 'targets'> & {
  /** IANA time zone of `date` and the shift; the targets' windows are converted to it. */
  timeZone: string;
  /** ImportedTarget[] as JSON text: one string crosses to the worker as one copy, where 5,000
   *  objects with 50,000 windows would be cloned field by field on the caller's thread. */
  targetsJson: string;
};

/** `routable: false`: no target has coordinates and a window on that day. */
export type ImportedDraftResult = { targets: number } & (
  { routable: false } | ({ routable: true } & RouteSuggestionResult)
);

export function suggestImportedDraft(input: ImportedDraftInput): ImportedDraftResult {
  const { timeZone, targetsJson, ...plan } = input;
  const imported = JSON.parse(targetsJson) as ImportedTarget[];
  checkTargetCount(imported.length);
  // Targets whose windows all lie on other days are unplaced before routing, listed first.
  const outside: UnplacedTarget[] = [];
  const targets: RouteTarget[] = [];
  for (const t of imported) {
    const timeWindows = windowsOnDay(t.timeWindows, plan.date, timeZone);
    if (timeWindows === null) {
      outside.push({ externalId: t.externalId, reason: 'OutsideTimeWindows' });
      continue;
    }
    targets.push({
      externalId: t.externalId,
      lat: t.lat,
      lon: t.lon,
      serviceMinutes: t.serviceMinutes ?? defaultServiceMinutes,
      timeWindows,
      priority: t.priority ?? defaultPriority,
    });
  }
  if (!targets.some((t) => t.lat !== null && t.lon !== null)) return { targets: imported.length, routable: false };
  const result = suggestRoutes({ ...plan, targets });
  return { targets: imported.length, routable: true, ...result, unplaced: [...outside, ...result.unplaced] };
}
