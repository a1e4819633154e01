import type { Config } from '../shared/config.js';
import { deadLetterTopic } from '../shared/dead-letters/headers.js';
import type { Pool } from '../shared/db/pool.js';
import type { InboundMessage, MessageBus, TopicSpec } from '../shared/kafka/bus.js';
import type { Logger } from '../shared/logger.js';
import type { ApplyStamp } from './apply-stamp.js';
import type { EdgeWait } from './edge-record.js';
import type { WorkerMetrics } from './worker-metrics.js';

export type WorkerDeps = {
  config: Config;
  logger: Logger;
  pool: Pool;
  bus: MessageBus;
  /** Outcome counters for /metrics (noWorkerMetrics: nothing is counted). */
  metrics: WorkerMetrics;
};

/** What a kind's apply function takes beside its message. */
export type ApplyArgs = { pool: Pool; wait: EdgeWait; stamp: ApplyStamp };
/** What a kind's dead-letter report takes beside its message: why it was dead-lettered. */
export type FailArgs = { pool: Pool; reason: string; stamp: ApplyStamp };

/**
 * One kind of worker: a consumer group over its topics and a typed handler. The runner
 * (consumer-loop.ts) owns scheduling, retries, dead-lettering, offsets and shutdown; a kind only
 * applies one message, idempotently (in one transaction), since any message may be delivered
 * again after a crash.
 */
export type WorkerKind = {
  name: string;
  /** Consumer group id (without the topic prefix). */
  groupId: string;
  /** Topics this kind consumes; created at start if missing. */
  topics(kafka: Config['kafka']): TopicSpec[];
  /**
   * Applies one message (messages of one key come in order, one at a time). What a throw means
   * is decided by classifyFailure (see consumer-loop.ts); EdgeRecordPending (edge-record.ts)
   * means "try again shortly".
   */
  apply(message: InboundMessage, deps: WorkerDeps): Promise<void>;
  /** Called after a message was dead-lettered (e.g. to mark its import job failed). */
  onDeadLetter?(message: InboundMessage, error: Error, deps: WorkerDeps): Promise<void>;
};

/**
 * A kind's topics and their dead-letter topics. A dead-letter topic takes what its topic takes
 * (max.message.bytes, replication), or a large poison message could never be dead-lettered and
 * would block its partition.
 */
export const topicsWithDeadLetters = (kind: WorkerKind, kafka: Config['kafka']): TopicSpec[] =>
  kind.topics(kafka).flatMap((t) => [t, { ...t, topic: deadLetterTopic(t.topic), partitions: 1 }]);
