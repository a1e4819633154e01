import { submittedMessageSchema } from '../../shared/appointments/submitted-message.js';
import { isReplayed } from '../../shared/dead-letters/headers.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { decodeMessage, decodeOrNull } from '../decode.js';
import { applyStamp } from '../apply-stamp.js';
import { edgeWait } from '../edge-record.js';
import type { WorkerKind } from '../worker-kind.js';
import { failSubmitted, validateSubmitted } from './validate-request.js';

/** Validates submitted appointment requests and advances them (Submitted → PendingReview or Rejected). */
export const appointmentsWorker: WorkerKind = {
  name: 'appointments',
  groupId: 'appointments',
  topics: (kafka) => [topicSpec(kafka, 'appointments')],
  async apply(message, deps) {
    const submitted = decodeMessage(message, submittedMessageSchema);
    const id = submitted.payload.appointmentRequestId;
    const wait = edgeWait(deps, { producedAt: submitted.producedAt, recordId: id, what: `appointment ${id}` });
    const outcome = await validateSubmitted({
      pool: deps.pool,
      message: submitted,
      wait,
      stamp: applyStamp(message, submitted.producedAt, deps),
      replayed: isReplayed(message),
    });
    deps.logger.debug({ worker: 'appointments', appointmentRequestId: id, outcome }, 'appointment request handled');
  },
  async onDeadLetter(message, error, deps) {
    const submitted = decodeOrNull(message, submittedMessageSchema);
    if (!submitted) return; // no request to mark; the dead-letter topic keeps the message
    const reason = `The request could not be processed: ${error.message}`.slice(0, 1000);
    const stamp = applyStamp(message, submitted.producedAt, deps);
    await failSubmitted({ pool: deps.pool, message: submitted, reason, stamp });
  },
};
