// Import job lifecycle (who moves it):
//   Queued               the gateway recorded the job and Kafka acknowledged its chunks
//   Processing           a worker applied the first chunk
//   Completed            every accepted target applied; none rejected or failed
//   CompletedWithErrors  every chunk done, but some targets were rejected at the edge or failed
//   Failed               every chunk done and none applied (all failed after retries)
// Completed, CompletedWithErrors and Failed are final: a polling client can stop.
export const importJobStatuses = ['Queued', 'Processing', 'Completed', 'CompletedWithErrors', 'Failed'] as const;
export type ImportJobStatus = (typeof importJobStatuses)[number];

/** How many per-item errors a job keeps; the rest are counted in errorsOmitted. */
export const maxStoredItemErrors = 100;

export type ItemError = { index: number; externalId: string | null; field: string | null; message: string };
