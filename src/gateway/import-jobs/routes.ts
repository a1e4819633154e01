import type { Config } from '../../shared/config.js';
import type { TenantPool } from '../../shared/db/tenant-scope.js';
import { notFound } from '../../shared/errors.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { importJobIdParamsSchema, importJobListSchema, importJobSchema, listImportJobsQuery } from './schemas.js';
import { findImportJob, listImportJobs } from './store.js';

export const importJobRoutes = (pool: TenantPool, inbound: Config['inbound']): RouteDefinition[] => [
  defineRoute({
    method: 'get',
    path: '/api/v1/import-jobs',
    operationId: 'listImportJobs',
    summary: "The caller's own import jobs, newest first",
    description: `Only jobs created by the calling Integration Client. Paged with skip/take (take ≤ ${inbound.importJobsMaxTake}; more is a 400).`,
    tag: 'Import jobs',
    auth: 'apiKey',
    query: listImportJobsQuery(inbound.importJobsMaxTake),
    responses: { 200: { description: 'A page of import jobs', schema: importJobListSchema } },
    async handler({ query, client }) {
      const page = await pool.run(client.tenantId, (tx) => listImportJobs(tx, client.clientId, query));
      return { status: 200, body: { ...page, skip: query.skip, take: query.take } };
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
