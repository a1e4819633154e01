import { z } from 'zod';
import { appointmentRequestSchema } from '../../shared/appointments/request-schema.js';
import { maxLeadDays } from '../../shared/appointments/business-rules.js';
import { cancellableStatuses } from '../../shared/appointments/statuses.js';
import { AppError, notFound } from '../../shared/errors.js';
import { parseOrThrow } from '../http/validate.js';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';
import { cancelAppointmentRequest } from './cancel.js';
import {
  appointmentParamsSchema,
  appointmentRecordSchema,
  appointmentStatusViewSchema,
  cancelIdempotencyKeySchema,
  cancelRequestSchema,
  cancelResponseSchema,
} from './schemas.js';
import { findRequest, findStatus } from './store.js';
import { submitAppointmentRequest } from './submit.js';
import type { WriteDeps } from '../edge/record-then-produce.js';

export const appointmentsPath = '/connect/v1/appointment-requests';
const tag = 'Appointment requests';

const location = z.string().meta({ description: 'The URL of the request: /connect/v1/appointment-requests/{id}.' });
const replayed = z.literal('true').meta({ description: 'Present (true) when this answers a repeated request.' });
const notFound404 =
  "resource_not_found: no appointment request with this id belongs to the calling client (another client's " +
  'request, even of the same tenant, is not found either).';

export function appointmentRoutes(deps: WriteDeps): RouteDefinition[] {
  return [
    defineRoute({
      method: 'post',
      path: appointmentsPath,
      operationId: 'submitAppointmentRequest',
      summary: 'Submit an appointment request',
      description:
        'Records the request as Submitted and queues it for validation; it is readable at once. The appointments ' +
        'worker then checks the business rules: every preferred time window must end after the validation time and ' +
        `start within ${maxLeadDays} days of it, and an urgent request needs contact.phone. A request that passes ` +
        'moves to Validated and at once to PendingReview (two history entries); one that does not is Rejected with ' +
        'the reason (see GET …/{id}/status). Duplicates: the externalReference is unique per Integration Client. ' +
        'Submitting it again with the same content (compared after defaults, whatever the key order) answers 200 ' +
        'with the existing request in its current status and `Idempotent-Replayed: true`, and queues nothing; with ' +
        'different content it is a 409 idempotency_conflict (details.id names the existing request).',
      tag,
      auth: 'accessToken',
      body: appointmentRequestSchema,
      errorStatuses: [409],
      errorDescriptions: {
        400: 'invalid_json, or validation_failed with fieldErrors per field (unknown fields are errors).',
        409: 'idempotency_conflict: this externalReference was submitted before with different content.',
      },
      responses: {
        202: {
          description: 'Recorded as Submitted and queued for validation.',
          schema: appointmentRecordSchema,
          headers: { Location: location },
        },
        200: {
          description: 'This externalReference was submitted before with the same content: the existing request.',
          schema: appointmentRecordSchema,
          headers: { Location: location, 'Idempotent-Replayed': replayed },
        },
      },
      async handler({ body, client, requestId, correlationId }) {
        const { record, replayed } = await submitAppointmentRequest(deps, client, { requestId, correlationId }, body);
        return {
          status: replayed ? 200 : 202,
          body: record,
          headers: {
            Location: `${appointmentsPath}/${record.id}`,
            ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}),
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${appointmentsPath}/{id}`,
      operationId: 'getAppointmentRequest',
      summary: 'Read an appointment request',
      description: 'The whole record as stored (the submission with defaults applied) with its current status.',
      tag,
      auth: 'accessToken',
      params: appointmentParamsSchema,
      errorStatuses: [404],
      errorDescriptions: { 404: notFound404 },
      responses: { 200: { description: 'The appointment request', schema: appointmentRecordSchema } },
      async handler({ params, client }) {
        const record = await deps.tenantPool.run(client.tenantId, (tx) => findRequest(tx, client.clientId, params.id));
        if (!record) throw notFound(`Appointment request ${params.id}`);
        return { status: 200, body: record };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${appointmentsPath}/{id}/status`,
      operationId: 'getAppointmentRequestStatus',
      summary: 'Read the status of an appointment request and its history',
      description:
        'The current status and every status the request entered, oldest first, with when, who (client, system, ' +
        'back-office) and why (always for Rejected, Failed and Cancelled).',
      tag,
      auth: 'accessToken',
      params: appointmentParamsSchema,
      errorStatuses: [404],
      errorDescriptions: { 404: notFound404 },
      responses: { 200: { description: 'Status and history', schema: appointmentStatusViewSchema } },
      async handler({ params, client }) {
        const view = await deps.tenantPool.run(client.tenantId, (tx) => findStatus(tx, client.clientId, params.id));
        if (!view) throw notFound(`Appointment request ${params.id}`);
        return { status: 200, body: view };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${appointmentsPath}/{id}/cancel`,
      operationId: 'cancelAppointmentRequest',
      summary: 'Cancel an appointment request',
      description:
        `Allowed from ${cancellableStatuses.join(', ')}; from InProgress, Completed, Rejected or Failed it is a 409 ` +
        'invalid_state_transition. Idempotent by the Idempotency-Key header (a UUID, required; missing or not a ' +
        'UUID: 400): the same key with the same body answers 200 with the first answer again (same cancelledAt) and ' +
        '`Idempotent-Replayed: true`; the same key with a different body, or a key already used to cancel another ' +
        'request, is a 409 idempotency_conflict; a different key on a request that is already Cancelled is a 409 ' +
        'already_cancelled whose details carry the original cancelledAt.',
      tag,
      auth: 'accessToken',
      params: appointmentParamsSchema,
      requestHeaders: z.object({
        'Idempotency-Key': z.uuid().meta({ description: 'A UUID chosen by the client, one per cancel intent.' }),
      }),
      body: cancelRequestSchema,
      errorStatuses: [404, 409],
      errorDescriptions: {
        400: 'validation_failed: the body, or the Idempotency-Key header (missing or not a UUID; fieldErrors names it).',
        404: notFound404,
        409:
          'invalid_state_transition (details: status, cancellableFrom), already_cancelled (details: cancelledAt) or ' +
          'idempotency_conflict (the key was used with a different body or for another request).',
      },
      responses: {
        200: {
          description: 'Cancelled (or the replay of the cancel with this Idempotency-Key).',
          schema: cancelResponseSchema,
          headers: { 'Idempotent-Replayed': replayed },
        },
      },
      async handler({ params, body, client, header }) {
        const raw = header('idempotency-key');
        if (!raw) {
          throw new AppError('validation_failed', 'The Idempotency-Key header is required.', {
            'Idempotency-Key': ['Required: a UUID.'],
          });
        }
        const key = parseOrThrow(cancelIdempotencyKeySchema, raw, 'Idempotency-Key').toLowerCase();
        const result = await cancelAppointmentRequest(deps, client, params.id, key, body);
        return {
          status: 200,
          body: result.body,
          ...(result.replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {}),
        };
      },
    }),
  ];
}
