import { createJobRequestSchema, jobStatuses } from '../../shared/jobs/job.js';
import { contentFingerprint } from '../http/fingerprint.js';
import { idempotencyKeyOf } from '../http/idempotency-key.js';
import { parseOrThrow } from '../http/validate.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { createJob } from './create-job.js';
import { createJobResponseSchema } from './schemas.js';
import type { WriteDeps } from '../edge/record-then-produce.js';

const description =
  'Idempotent by the Idempotency-Key header, or by externalId when no header is sent: the first request ' +
  'answers 201 (created=true, idempotentReplay=false); the same key with the same body answers 200 with the same ' +
  'fieldJobId and jobNumber (created=false, idempotentReplay=true); the same key with a different body, or an ' +
  'externalId another request already created, is a 409. Keys are kept as long as the job. Concurrent duplicates ' +
  'wait for the first and get its answer as a replay: never a second job. 400 (malformed, wrong types, bounds) and ' +
  '409/422 use the Connect error shape with per-field details; 422: time window ending before it starts or in the ' +
  `past, an unknown job type of the tenant, an unknown importTargetRef. Status values: ${jobStatuses.join(', ')}. ` +
  'A worker materialises the job and its work order (external work-order id = externalId), normally within a ' +
  'second; until then, material usage for that work order answers 404.';

/** One operation at two addresses (spec part 4 note 1): the same definition mounted twice. */
export function jobRoutes(deps: WriteDeps): RouteDefinition[] {
  return (['/api/connect/jobs', '/api/v1/connect/jobs'] as const).map((path) =>
    defineRoute({
      method: 'post',
      path,
      operationId: path === '/api/connect/jobs' ? 'createJobUnversioned' : 'createJob',
      summary: 'Create a field job',
      description,
      tag: 'Jobs',
      auth: 'apiKey',
      body: createJobRequestSchema,
      parseBody: (raw) => ({ body: parseOrThrow(createJobRequestSchema, raw, 'body'), hash: contentFingerprint(raw) }),
      errorStatuses: [409, 422],
      connectErrorStatuses: [400, 409, 422],
      responses: {
        201: { description: 'Created', schema: createJobResponseSchema },
        200: { description: 'Idempotent replay of an earlier request', schema: createJobResponseSchema },
      },
      async handler({ body, client, header, requestId, correlationId }) {
        const headerKey = idempotencyKeyOf(header('idempotency-key'));
        const key = headerKey ? `header:${headerKey}` : `externalId:${body.body.externalId}`;
        return createJob(deps, client, { requestId, correlationId }, { ...body, key });
      },
    }),
  );
}
