import { randomUUID } from 'node:crypto';
import {
  runRouteSuggestionInWorker,
  type RouteSuggestionInput,
  type RouteSuggestionResult,
  type RouteTarget,
  type UnplacedTarget,
} from '../../routing/index.js';
import type { Pool } from '../../shared/db/pool.js';
import { AppError, notFound } from '../../shared/errors.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { windowsOnDay } from './local-windows.js';
import type { CreateRouteSuggestion, RouteSuggestionDto } from './schemas.js';
import { findJobStatus, insertSuggestion, jobTargets, type JobTargetRow } from './store.js';

export const defaultServiceMinutes = 15;
export const defaultSpeedKmh = 40;
const finalStatuses = ['Completed', 'CompletedWithErrors'];

function toRouteTarget(t: JobTargetRow, date: string, timeZone: string): RouteTarget | UnplacedTarget {
  const windows = windowsOnDay(t.time_windows, date, timeZone);
  if (windows === null) return { externalId: t.external_id, reason: 'OutsideTimeWindows' };
  return {
    externalId: t.external_id,
    lat: t.latitude,
    lon: t.longitude,
    serviceMinutes: t.service_duration_minutes ?? defaultServiceMinutes,
    timeWindows: windows,
    priority: t.priority ?? 3,
  };
}

/**
 * Runs the heuristic in a worker thread that is terminated when the budget runs out (422) or the
 * client leaves, so one large draft cannot hold a CPU and an in-flight slot for minutes.
 */
async function computeWithinBudget(
  input: RouteSuggestionInput,
  budget: { ms: number; clientLeft?: AbortSignal },
): Promise<RouteSuggestionResult> {
  const timeUp = AbortSignal.timeout(budget.ms);
  const signal = budget.clientLeft ? AbortSignal.any([timeUp, budget.clientLeft]) : timeUp;
  try {
    return await runRouteSuggestionInWorker(input, { signal });
  } catch (err) {
    if (!timeUp.aborted) throw err;
    throw new AppError(
      'computation_budget_exceeded',
      `The draft could not be computed within ${budget.ms} ms; split the import job or plan fewer vehicles.`,
      null,
      { budgetMs: budget.ms, targets: input.targets.length },
    );
  }
}

/** Builds a draft from the job's targets off the request thread, stores it, and returns it. */
export async function createRouteSuggestion(
  pool: Pool,
  client: AuthenticatedClient,
  importJobId: string,
  req: CreateRouteSuggestion,
  budget: { ms: number; clientLeft?: AbortSignal } = { ms: 30_000 },
): Promise<RouteSuggestionDto> {
  const status = await findJobStatus(pool, client.clientId, importJobId);
  if (!status) throw notFound(`Import job ${importJobId}`);
  if (!finalStatuses.includes(status)) {
    throw new AppError(
      'import_job_not_finished',
      `Import job ${importJobId} is ${status}; a route suggestion needs its targets applied. Retry when the job is Completed or CompletedWithErrors.`,
      null,
      { status },
    );
  }
  const timeZone = req.timeZone ?? 'UTC';
  const rows = await jobTargets(pool, client.tenantId, importJobId);
  const converted = rows.map((t) => toRouteTarget(t, req.date, timeZone));
  const targets = converted.filter((t): t is RouteTarget => 'lat' in t);
  if (!targets.some((t) => t.lat !== null && t.lon !== null)) {
    throw new AppError(
      'no_routable_targets',
      `Import job ${importJobId} has no target with coordinates for ${req.date}.`,
      null,
      {
        targets: rows.length,
      },
    );
  }
  const input = {
    depot: { lat: req.depot.latitude, lon: req.depot.longitude },
    ...(req.endDepot ? { endDepot: { lat: req.endDepot.latitude, lon: req.endDepot.longitude } } : {}),
    date: req.date,
    vehicles: req.vehicles,
    shift: req.shift,
    ...(req.maxStopsPerRoute ? { maxStopsPerRoute: req.maxStopsPerRoute } : {}),
    averageSpeedKmh: req.averageSpeedKmh ?? defaultSpeedKmh,
    targets,
  };
  const result = await computeWithinBudget(input, budget);
  const unplaced = [...converted.filter((t): t is UnplacedTarget => !('lat' in t)), ...result.unplaced];
  const placed = result.routes.reduce((n, r) => n + r.stops.length, 0);
  const dto: RouteSuggestionDto = {
    id: randomUUID(),
    importJobId: Number(importJobId),
    name: req.name ?? null,
    status: 'Draft',
    createdAt: new Date().toISOString(),
    date: req.date,
    timeZone,
    vehicles: req.vehicles,
    averageSpeedKmh: req.averageSpeedKmh ?? defaultSpeedKmh,
    routes: result.routes.map((r) => ({
      ...r,
      stops: r.stops.map(({ lat, lon, ...s }) => ({ ...s, coordinates: { latitude: lat, longitude: lon } })),
    })),
    unplaced,
    totalDistanceKm: result.totalDistanceKm,
    totalDurationMinutes: result.totalDurationMinutes,
    summary: { targets: rows.length, placed, unplaced: unplaced.length },
  };
  await insertSuggestion(pool, { tenantId: client.tenantId, clientId: client.clientId, request: req, dto });
  return dto;
}
