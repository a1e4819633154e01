import type { Config } from '../../shared/config.js';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import { notFound } from '../../shared/errors.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import {
  importJobIdParamsSchema,
  importJobListSchema,
  importJobSchema,
  importJobsCursor,
  importJobsTotalLimit,
  listImportJobsQuery,
  maxImportJobsSkip,
} from './schemas.js';
import { findImportJob, listImportJobs } from './store.js';

export const importJobRoutes = (pool: TenantPool, inbound: Config['inbound']): RouteDefinition[] => [
  defineRoute({
    method: 'get',
    path: '/api/v1/import-jobs',
    operationId: 'listImportJobs',
    summary: "The caller's own import jobs, newest first",
    description:
      `Only jobs created by the calling Integration Client. Paged by cursor (each page's nextCursor as the next ` +
      `request's cursor: the same cost at any depth) or with skip/take (skip ≤ ${maxImportJobsSkip}, ` +
      `take ≤ ${inbound.importJobsMaxTake}; more is a 400). total counts at most ${importJobsTotalLimit} jobs.`,
    tag: 'Import jobs',
    auth: 'apiKey',
    query: listImportJobsQuery(inbound.importJobsMaxTake),
    responses: { 200: { description: 'A page of import jobs', schema: importJobListSchema } },
    async handler({ query, client }) {
      const { items, total, totalIsExact, lastId } = await pool.run(client.tenantId, (tx) =>
        listImportJobs(tx, client, { ...query, afterId: query.cursor }, importJobsTotalLimit),
      );
      const nextCursor = lastId === null ? null : importJobsCursor.after(lastId);
      return { status: 200, body: { items, total, totalIsExact, skip: query.skip, take: query.take, nextCursor } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/import-jobs/{id}',
    operationId: 'getImportJob',
    summary: 'One import job of the caller',
    description: 'Poll this until the status is final (Completed, CompletedWithErrors or Failed).',
    tag: 'Import jobs',
    auth: 'apiKey',
    params: importJobIdParamsSchema,
    errorStatuses: [404],
    responses: { 200: { description: 'The import job', schema: importJobSchema } },
    async handler({ params, client }) {
      const job = await pool.run(client.tenantId, (tx) => findImportJob(tx, client.clientId, params.id));
      if (!job) throw notFound(`Import job ${params.id}`);
      return { status: 200, body: job };
    },
  }),
];
