import { newAppointmentId } from '../../shared/appointments/ids.js';
import { normalizeAppointmentRequest, type AppointmentRequestInput } from '../../shared/appointments/request-schema.js';
import {
  submittedMessageType,
  submittedMessageVersion,
  type SubmittedPayload,
} from '../../shared/appointments/submitted-message.js';
import { appendHistory } from '../../shared/appointments/transitions-sql.js';
import { AppError } from '../../shared/errors.js';
import { topicNames } from '../../shared/kafka/topics.js';
import { envelope, jsonMessage } from '../../shared/messages.js';
import type { AuthenticatedClient } from '../auth/authenticate.js';
import { contentFingerprint } from '../http/fingerprint.js';
import { recordThenProduce, type WriteDeps } from '../edge/record-then-produce.js';
import type { AppointmentRecordDto } from './schemas.js';
import { findByExternalReference, insertRequest, toRecordDto } from './store.js';

export type SubmitResult = { record: AppointmentRecordDto; replayed: boolean };

/**
 * Records the request as Submitted (with its first history entry) and produces it to the
 * appointments topic, in one transaction committed after Kafka acknowledged (recordThenProduce).
 * The same externalReference from the same client answers the existing request when the body is
 * the same (nothing produced again), and is a 409 when it differs: never two requests.
 */
export function submitAppointmentRequest(
  deps: WriteDeps,
  client: AuthenticatedClient,
  ids: { requestId: string; correlationId: string },
  input: AppointmentRequestInput,
): Promise<SubmitResult> {
  const request = normalizeAppointmentRequest(input);
  const requestHash = contentFingerprint(request);
  return recordThenProduce<SubmitResult>(deps, client.tenantId, async (tx) => {
    const id = newAppointmentId();
    const row = await insertRequest(tx, {
      id,
      tenantId: client.tenantId,
      clientId: client.clientId,
      request,
      requestHash,
    });
    if (!row) {
      const existing = (await findByExternalReference(tx, client.clientId, request.externalReference))!;
      if (!existing.request_hash.equals(requestHash)) {
        throw new AppError(
          'idempotency_conflict',
          `An appointment request with externalReference ${JSON.stringify(request.externalReference)} exists with ` +
            'different content; use a new externalReference for a new request.',
          null,
          { id: existing.id },
        );
      }
      return { result: { record: toRecordDto(existing), replayed: true } };
    }
    await appendHistory(tx, { id, from: null, to: 'Submitted', reason: null, actor: 'client', at: row.created_at });
    const payload: SubmittedPayload = { appointmentRequestId: id, externalReference: request.externalReference };
    const meta = { tenantId: client.tenantId, clientId: client.clientId, ...ids };
    return {
      result: { record: toRecordDto(row), replayed: false },
      produce: {
        topic: topicNames(deps.config.kafka).appointments,
        recordId: id,
        messages: [jsonMessage(id, envelope(submittedMessageType, submittedMessageVersion, meta, payload))],
      },
    };
  });
}
