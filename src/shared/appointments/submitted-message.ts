import { z } from 'zod';
import { messageSchema } from '../messages.js';
import { appointmentIdPattern } from './ids.js';

// appointment.submitted v1: a request the gateway recorded as Submitted, to be validated by the
// appointments worker. Keyed by the request id. The request itself is the stored row (the edge
// record), so the worker validates exactly what the client can read.
export const submittedMessageType = 'appointment.submitted';
export const submittedMessageVersion = 1;

export const submittedPayloadSchema = z.object({
  appointmentRequestId: z.string().regex(appointmentIdPattern),
  externalReference: z.string(),
});

export type SubmittedPayload = z.infer<typeof submittedPayloadSchema>;

export const submittedMessageSchema = messageSchema(
  submittedMessageType,
  submittedMessageVersion,
  submittedPayloadSchema,
);
