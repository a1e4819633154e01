import { submittedMessageSchema } from '../../shared/appointments/submitted-message.js';
import { topicSpec } from '../../shared/kafka/topics.js';
import { decodeMessage } from '../decode.js';
import { edgeWriterDone } from '../../shared/edge-lock.js';
import { awaitEdgeRecord } from '../edge-record.js';
import { applyEach } from '../permanent-error.js';
import type { WorkerKind } from '../worker-kind.js';
import { failSubmitted, validateSubmitted } from './validate-request.js';

/** Validates submitted appointment requests and advances them (Submitted → PendingReview or Rejected). */
export const appointmentsWorker: WorkerKind = {
  name: 'appointments',
  groupId: 'appointments',
  topics: (config) => [topicSpec(config, 'appointments')],
  async handleBatch(messages, deps, ctx) {
    const log = deps.logger.child({ worker: 'appointments' });
    await applyEach(
      messages,
      ctx,
      async (message) => {
        const submitted = decodeMessage(message, submittedMessageSchema);
        const id = submitted.payload.appointmentRequestId;
        const outcome = await validateSubmitted(deps.pool, submitted, (load) =>
          awaitEdgeRecord(
            load,
            submitted.producedAt,
            deps.config.orphanGraceMs,
            ctx.heartbeat,
            log,
            `appointment ${id}`,
            () => edgeWriterDone(deps.pool, id),
          ),
        );
        log.debug({ appointmentRequestId: id, outcome }, 'appointment request handled');
      },
      log,
    );
  },
  async onDeadLetter(message, error, deps) {
    let submitted;
    try {
      submitted = decodeMessage(message, submittedMessageSchema);
    } catch {
      return; // undecodable: no request to mark; the dead-letter topic keeps it
    }
    await failSubmitted(deps.pool, submitted, `The request could not be processed: ${error.message}`.slice(0, 1000));
  },
};
