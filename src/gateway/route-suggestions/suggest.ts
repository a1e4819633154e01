import { randomUUID } from 'node:crypto';
import {
  checkTargetCount,
  defaultAverageSpeedKmh,
  maxTargets,
  RouteInputError,
  runRouteSuggestionInWorker,
  type DraftAnswer,
  type ImportedDraftInput,
} from '../../routing/index.js';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import { AppError, notFound } from '../../shared/errors.js';
import { maxTimeWindows } from '../../shared/inbound/target-schema.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import type { CreateRouteSuggestion } from './schemas.js';
import {
  answerJson,
  findJobStatus,
  insertSuggestion,
  jobTargetCounts,
  jobTargetsJson,
  type DraftHeader,
} from './store.js';

const finalStatuses = ['Completed', 'CompletedWithErrors'];

/** Refuses (400 via RouteInputError) a job over the draft limits before any of its targets is
 *  read; returns its target count. */
async function checkJobSize(pool: TenantPool, tenantId: string, importJobId: string): Promise<number> {
  const counts = await pool.run(tenantId, (tx) => jobTargetCounts(tx, tenantId, importJobId, maxTargets + 1));
  checkTargetCount(counts.targets);
  if (counts.maxWindows > maxTimeWindows) {
    throw new RouteInputError(`targets must have at most ${maxTimeWindows} time windows each`);
  }
  return counts.targets;
}

/**
 * Runs the whole draft (parsing, window conversion, heuristic) in a worker thread that is
 * terminated when the budget runs out (422) or the client leaves, so one large draft can hold
 * neither the event loop nor a CPU and an in-flight slot for minutes.
 */
async function computeWithinBudget(
  input: ImportedDraftInput,
  budget: DraftBudget,
  targets: number,
): Promise<DraftAnswer> {
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
      { budgetMs: budget.ms, targets },
    );
  }
}

/** A draft's computation: its time, the client leaving, and its memory (reserved before it starts). */
export type DraftBudget = { ms: number; clientLeft?: AbortSignal; reserveMemory?: (bytes: number) => () => void };

/** What a draft of `targets` holds at most: its distance matrix (the square of its nodes, in
 *  doubles), the targets as read and parsed, and the worker thread's own isolate. */
export const draftMemoryBytes = (targets: number) => (targets + 2) ** 2 * 8 + targets * 4096 + 24 * 1024 * 1024;

/** Builds a draft from the job's targets off the request thread (limits checked first), stores
 *  it, and returns it as JSON text (a RouteSuggestionDto). */
export async function createRouteSuggestion(
  pool: TenantPool,
  client: AuthenticatedClient,
  importJobId: string,
  req: CreateRouteSuggestion,
  budget: DraftBudget,
): Promise<string> {
  const status = await pool.run(client.tenantId, (tx) => findJobStatus(tx, client.clientId, importJobId));
  if (!status) throw notFound(`Import job ${importJobId}`);
  if (!finalStatuses.includes(status)) {
    throw new AppError(
      'import_job_not_finished',
      `Import job ${importJobId} is ${status}; a route suggestion needs its targets applied. Retry when the job is Completed or CompletedWithErrors.`,
      null,
      { status },
    );
  }
  const targets = await checkJobSize(pool, client.tenantId, importJobId);
  // Reserved before the targets are read; freed when the draft is computed (the result is small).
  const release = budget.reserveMemory?.(draftMemoryBytes(targets));
  try {
    return await computeAndStore(pool, client, importJobId, req, budget, targets);
  } finally {
    release?.();
  }
}

async function computeAndStore(
  pool: TenantPool,
  client: AuthenticatedClient,
  importJobId: string,
  req: CreateRouteSuggestion,
  budget: DraftBudget,
  targets: number,
): Promise<string> {
  const timeZone = req.timeZone ?? 'UTC';
  const input: ImportedDraftInput = {
    depot: { lat: req.depot.latitude, lon: req.depot.longitude },
    ...(req.endDepot ? { endDepot: { lat: req.endDepot.latitude, lon: req.endDepot.longitude } } : {}),
    date: req.date,
    timeZone,
    vehicles: req.vehicles,
    shift: req.shift,
    ...(req.maxStopsPerRoute ? { maxStopsPerRoute: req.maxStopsPerRoute } : {}),
    averageSpeedKmh: req.averageSpeedKmh ?? defaultAverageSpeedKmh,
    targetsJson: await pool.run(client.tenantId, (tx) => jobTargetsJson(tx, client.tenantId, importJobId)),
  };
  const answer = await computeWithinBudget(input, budget, targets);
  if (!answer.routable) {
    throw new AppError(
      'no_routable_targets',
      `Import job ${importJobId} has no target with coordinates for ${req.date}.`,
      null,
      { targets: answer.targets },
    );
  }
  const header: DraftHeader = {
    id: randomUUID(),
    importJobId: Number(importJobId),
    name: req.name ?? null,
    status: 'Draft',
    createdAt: new Date().toISOString(),
    date: req.date,
    timeZone,
    vehicles: req.vehicles,
    averageSpeedKmh: req.averageSpeedKmh ?? defaultAverageSpeedKmh,
  };
  await pool.run(client.tenantId, (tx) =>
    insertSuggestion(tx, {
      tenantId: client.tenantId,
      clientId: client.clientId,
      request: req,
      header,
      documentJson: answer.documentJson,
    }),
  );
  return answerJson(header, answer.documentJson);
}
