import { z } from 'zod';
import { messageSchema } from '../messages.js';
import { createJobRequestSchema } from './job.js';

// jobs.create v1: a field job the gateway numbered and recorded, for the worker to materialise.
export const jobMessageType = 'jobs.create';
export const jobMessageVersion = 1;

export const jobPayloadSchema = z.object({
  fieldJobId: z.uuid(),
  jobNumber: z.string(),
  request: createJobRequestSchema,
});
export type JobPayload = z.infer<typeof jobPayloadSchema>;

export const jobMessageSchema = messageSchema(jobMessageType, jobMessageVersion, jobPayloadSchema);
