import { appointmentsWorker } from './appointments/kind.js';
import { inboundExpressWorker, inboundWorker } from './inbound/kind.js';
import { jobsWorker } from './jobs/kind.js';
import { materialsWorker } from './materials/kind.js';
import type { PollingWorker } from './start-workers.js';
import { webhookDispatcher } from './webhooks/dispatcher.js';
import type { WorkerKind } from './worker-kind.js';

/**
 * Every worker kind the runner can host, by name (the names WORKERS accepts).
 */
export const workerKinds: Record<string, WorkerKind | PollingWorker> = {
  inbound: inboundWorker,
  /** Small imports (the express lane): deploy it as its own process so bulk work never delays it. */
  'inbound-express': inboundExpressWorker,
  appointments: appointmentsWorker,
  jobs: jobsWorker,
  materials: materialsWorker,
  /** Not a consumer group: the webhook dispatcher, polling the outbox in PostgreSQL. */
  webhooks: webhookDispatcher,
};
