import { randomUUID } from 'node:crypto';
import type { TenantTx } from '../../shared/db/tenant-scope.js';
import { AppError, unavailable, type FieldErrors } from '../../shared/errors.js';
import { jobMessageType, jobMessageVersion, type JobPayload } from '../../shared/jobs/job-message.js';
import type { CreateJobRequest } from '../../shared/jobs/job.js';
import { topicNames } from '../../shared/kafka/topics.js';
import { envelope, jsonMessage } from '../../shared/messages.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { recordThenProduce, type EdgeWrite, type WriteDeps } from '../edge/record-then-produce.js';
import {
  findJobRequest,
  insertJobRequest,
  jobTypeExists,
  lockKey,
  nextJobNumber,
  targetExists,
  type JobRequestRow,
} from './store.js';

type Ids = { requestId: string; correlationId: string };
export type CreateJobAnswer = { status: 201 | 200; body: Record<string, unknown> };

/** What makes a well-formed request impossible to carry out (422), field by field. */
async function unprocessable(tx: TenantTx, tenantId: string, req: CreateJobRequest, now: number): Promise<FieldErrors> {
  const errors: FieldErrors = {};
  const window = req.requestedTimeWindow;
  if (window && Date.parse(window.end) <= Date.parse(window.start)) {
    errors['requestedTimeWindow.end'] = ['must be after requestedTimeWindow.start'];
  } else if (window && Date.parse(window.end) < now) {
    errors['requestedTimeWindow.end'] = ['the requested time window is in the past'];
  }
  if (!(await jobTypeExists(tx, tenantId, req.jobType))) errors.jobType = [`unknown job type ${req.jobType}`];
  const ref = req.importTargetRef;
  if (ref && !(await targetExists(tx, tenantId, ref.sourceSystem, ref.externalId))) {
    errors.importTargetRef = [`no inbound target ${ref.externalId} from ${ref.sourceSystem}`];
  }
  return errors;
}

/**
 * Creates a field job once per idempotency key (the Idempotency-Key header, else the external id):
 * new key → 201; same key and body → 200 replay with the first ids; otherwise 409. Duplicates in
 * flight queue on an advisory lock of (tenant, key) and see the first one's committed row.
 *
 * The job number is drawn before the edge transaction, in a statement of its own, so no
 * tenant-wide lock is held while Kafka acknowledges: numbers are unique and increase per tenant,
 * but a creation that fails afterwards (503, a concurrent duplicate) leaves a gap.
 */
export async function createJob(
  deps: WriteDeps,
  client: AuthenticatedClient,
  ids: Ids,
  req: { body: CreateJobRequest; hash: Buffer; key: string },
): Promise<CreateJobAnswer> {
  const { body, hash, key } = req;
  const answer = (status: 201 | 200, row: { fieldJobId: string; jobNumber: string; status: string }) => ({
    status,
    body: {
      requestId: ids.requestId,
      correlationId: ids.correlationId,
      externalId: body.externalId,
      fieldJobId: row.fieldJobId,
      jobNumber: row.jobNumber,
      status: row.status,
      created: status === 201,
      idempotentReplay: status === 200,
    },
  });
  const replayOrConflict = (existing: JobRequestRow): EdgeWrite<CreateJobAnswer> => {
    if (existing.idempotency_key === key && existing.request_hash.equals(hash)) {
      const status = existing.status ?? 'Created';
      return { result: answer(200, { fieldJobId: existing.field_job_id, jobNumber: existing.job_number, status }) };
    }
    const field = existing.idempotency_key === key ? 'Idempotency-Key' : 'externalId';
    throw new AppError(
      'idempotency_conflict',
      existing.idempotency_key === key
        ? 'This idempotency key was already used with a different body.'
        : `A job with externalId ${body.externalId} was already created by another request.`,
      { [field]: ['already used for a different job request'] },
      { fieldJobId: existing.field_job_id },
    );
  };

  // A replay or a refusal needs no number; checked outside the transaction, then again inside.
  let jobNumber: string | null = null;
  // null: an earlier request with this key or external id exists.
  const errors = await deps.tenantPool.run(client.tenantId, async (tx) =>
    (await findJobRequest(tx, client.tenantId, key, body.externalId))
      ? null
      : unprocessable(tx, client.tenantId, body, Date.now()),
  );
  if (errors) {
    if (Object.keys(errors).length > 0) {
      throw new AppError('unprocessable', 'The job cannot be created as requested.', errors);
    }
    if (!deps.bus.available()) throw unavailable('Kafka'); // before a number is spent
    jobNumber = await deps.tenantPool.run(client.tenantId, (tx) => nextJobNumber(tx, client.tenantId));
  }

  return recordThenProduce<CreateJobAnswer>(deps, client.tenantId, async (tx) => {
    await lockKey(tx, client.tenantId, `key:${key}`);
    await lockKey(tx, client.tenantId, `ext:${body.externalId}`);
    const existing = await findJobRequest(tx, client.tenantId, key, body.externalId);
    if (existing) return replayOrConflict(existing);
    // Only when the first look saw a request that has since gone, which cannot happen
    // (job requests are never deleted); then the number is drawn here.
    jobNumber ??= await nextJobNumber(tx, client.tenantId);
    const fieldJobId = randomUUID();
    await insertJobRequest(tx, {
      fieldJobId,
      tenantId: client.tenantId,
      clientId: client.clientId,
      externalId: body.externalId,
      key,
      hash,
      jobNumber,
      request: body,
    });
    const payload: JobPayload = { fieldJobId, jobNumber, request: body };
    const meta = { tenantId: client.tenantId, clientId: client.clientId, ...ids };
    return {
      result: answer(201, { fieldJobId, jobNumber, status: 'Created' }),
      produce: {
        topic: topicNames(deps.config.kafka).jobs,
        recordId: fieldJobId,
        messages: [jsonMessage(fieldJobId, envelope(jobMessageType, jobMessageVersion, meta, payload))],
      },
    };
  });
}
