import type { Config } from '../../shared/config.js';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import { AppError, notFound } from '../../shared/errors.js';
import {
  defaultAverageSpeedKmh,
  defaultServiceMinutes,
  isTimeZone,
  maxTargets,
  RouteInputError,
} from '../../routing/index.js';
import { importJobIdParamsSchema } from '../import-jobs/schemas.js';
import { JsonText } from '../http/negotiate.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { createRouteSuggestionSchema, routeSuggestionSchema, suggestionIdParamsSchema } from './schemas.js';
import { findSuggestion } from './store.js';
import { createRouteSuggestion } from './suggest.js';
import type { MemoryBudget } from '../memory/memory-budget.js';

const method =
  `Targets are those whose current data came from the import job (a target later overwritten by another job ` +
  `belongs to that job). Distances are great-circle; driving time = distance / averageSpeedKmh (default ` +
  `${defaultAverageSpeedKmh} km/h). A target without serviceDurationMinutes takes ${defaultServiceMinutes} min. Target ` +
  `time windows are converted to the plan's time zone and clipped to the day; a target whose windows all lie on ` +
  `other days is unplaced (OutsideTimeWindows). Heuristic: sweep clustering, time-window-aware cheapest ` +
  `insertion, 2-opt and or-opt; deterministic for the same input. A job of more than ${maxTargets} targets is ` +
  `refused (400, fieldErrors.targets) before any of its targets is read; all other work (window conversion ` +
  `included) runs in a worker thread, within the budget.`;

export const routeSuggestionRoutes = (
  pool: TenantPool,
  routeSuggestions: Config['routeSuggestions'],
  memory: MemoryBudget,
): RouteDefinition[] => [
  defineRoute({
    method: 'post',
    path: '/api/v1/import-jobs/{id}/route-suggestion',
    operationId: 'createImportJobRouteSuggestion',
    summary: "Create a draft Smart Route Suggestion from an import job's targets",
    description:
      `${method} 404: unknown job or another client's. 409 import_job_not_finished: the job is Queued or ` +
      `Processing (retry when final). 422 no_routable_targets: no target has coordinates on that day. At most ` +
      `${routeSuggestions.maxInFlight} drafts are computed at once per gateway, within its memory budget ` +
      `(503 + Retry-After beyond; 429 memory_share_exceeded past the client's or tenant's share of it). A ` +
      `draft gets ${routeSuggestions.budgetMs} ms of computation (422 computation_budget_exceeded beyond) and ` +
      'is stopped when the client disconnects.',
    tag: 'Import jobs',
    auth: 'apiKey',
    params: importJobIdParamsSchema,
    body: createRouteSuggestionSchema,
    maxInFlight: routeSuggestions.maxInFlight,
    errorStatuses: [404, 409, 422],
    responses: { 200: { description: 'The stored draft', schema: routeSuggestionSchema } },
    async handler({ params, body, client, signal }) {
      if (body.timeZone && !isTimeZone(body.timeZone)) {
        throw new AppError('validation_failed', 'The request body is invalid.', {
          timeZone: ['unknown IANA time zone'],
        });
      }
      try {
        const budget = {
          ms: routeSuggestions.budgetMs,
          clientLeft: signal,
          reserveMemory: (bytes: number) =>
            memory.admitWork({ client: client.clientId, tenant: client.tenantId }, bytes),
        };
        const draft = await createRouteSuggestion(pool, client, params.id, body, budget);
        return { status: 200, body: new JsonText(draft) };
      } catch (err) {
        if (!(err instanceof RouteInputError)) throw err;
        const field = err.message.split(' ')[0]!;
        throw new AppError('validation_failed', 'The request body is invalid.', { [field]: [err.message] });
      }
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/route-suggestions/{id}',
    operationId: 'getRouteSuggestion',
    summary: 'A stored route suggestion draft of the caller',
    description: "Needs the route_suggestions.create scope (the scope that made it); 404 for another client's.",
    tag: 'Import jobs',
    auth: 'apiKey',
    params: suggestionIdParamsSchema,
    errorStatuses: [404],
    responses: { 200: { description: 'The draft', schema: routeSuggestionSchema } },
    async handler({ params, client }) {
      const found = await pool.run(client.tenantId, (tx) => findSuggestion(tx, client.clientId, params.id));
      if (!found) throw notFound(`Route suggestion ${params.id}`);
      return { status: 200, body: new JsonText(found) };
    },
  }),
];
