import { deadLetterHeaders, errorClassOf } from '../shared/dead-letters/headers.js';
import { classifyFailure, type FailureClass } from '../shared/db/errors.js';
import type { ConsumerGroup, InboundMessage } from '../shared/kafka/bus.js';
import { backoffMs, mayRetry, pause, schedules, type RetrySchedule } from '../shared/retry.js';
import { extractFrom, inSpan, SpanKind } from '../shared/tracing/context.js';
import { EdgeRecordPending } from './edge-record.js';
import { FairQueue, type Entry } from './fair-queue.js';
import { deadLetterTopic } from '../shared/dead-letters/headers.js';
import { topicsWithDeadLetters, type WorkerDeps, type WorkerKind } from './worker-kind.js';
import { noWorkerMetrics } from './worker-metrics.js';

const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));

/** How often applied offsets are committed (a crash re-applies at most this much, idempotently). */
const commitEveryMs = 1000;

export type RunningKind = {
  /** Applies nothing more, waits for the applies under way, commits, and leaves the group. */
  stop(): Promise<void>;
};

/**
 * Runs one worker kind: its consumer group fetches into a FairQueue (fair-queue.ts: tenants by
 * least served, each key in order), and this loop applies what the queue hands out,
 * WORKER_APPLY_CONCURRENCY messages at once.
 *
 * Each message is applied alone (its own transaction) and each failed attempt is classified
 * (classifyFailure, shared/db/errors.ts):
 * - permanent (data PostgreSQL refuses, a PermanentMessageError): the message goes to
 *   `<topic>.dlq` at once, with the error and its origin in headers, and the kind is told
 *   (onDeadLetter marks its record failed): a poison message costs one attempt;
 * - transient (deadlock, serialization, contention, anything unrecognised): retried after
 *   `schedule`'s backoff, up to its attempts, then dead-lettered; meanwhile only later messages of
 *   its key wait;
 * - outage (PostgreSQL not serving writes: unreachable, restarting, read-only during a
 *   failover, isPostgresUnavailable; or not migrated): no verdict, no attempt used, never
 *   dead-lettered; nothing is tried until a dependencyWait backoff has passed (every apply would
 *   fail the same way);
 * - EdgeRecordPending (its edge record is not committed yet): tried again after an
 *   edgeRecordWait backoff, holding only its key.
 * Offsets are committed only up to the oldest message not yet applied; a rebalance drops what is
 * not running (the next owner fetches it again). Nothing is dropped silently.
 */
export async function runWorkerKind(
  kind: WorkerKind,
  group: ConsumerGroup,
  deps: WorkerDeps,
  schedule: RetrySchedule = schedules.messageRetry,
): Promise<RunningKind> {
  const log = deps.logger.child({ worker: kind.name });
  const metrics = deps.metrics ?? noWorkerMetrics;
  const topics = kind.topics(deps.config.kafka);
  const slots = deps.config.workers.applyConcurrency;
  const queue = new FairQueue();
  const originOf = (m: InboundMessage) => `${m.topic}/${m.partition}/${m.offset}`;

  let running = 0;
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  let holdUntil = 0; // a dependency is away: nothing is tried before this
  let outages = 0; // consecutive attempts that found a dependency away
  let wakeTimer: NodeJS.Timeout | undefined;
  let wakeAt = Infinity;

  // Memory: a partition whose unapplied bytes pass its share of WORKER_BUFFER_BYTES is paused.
  const pausedPartitions = new Set<string>();
  const partitionShare = () => deps.config.workers.bufferBytes / Math.max(1, queue.partitionCount);
  const throttle = (topic: string, partition: number) => {
    const id = `${topic}/${partition}`;
    const bytes = queue.bufferedBytes(topic, partition);
    if (bytes > partitionShare() && !pausedPartitions.has(id)) {
      pausedPartitions.add(id);
      group.pause(topic, partition);
    } else if (bytes <= partitionShare() / 2 && pausedPartitions.delete(id)) {
      group.resume(topic, partition);
    }
  };

  const scheduleWake = (at: number) => {
    if (at >= wakeAt) return;
    clearTimeout(wakeTimer);
    wakeAt = at;
    wakeTimer = setTimeout(
      () => {
        wakeAt = Infinity;
        pump();
      },
      Math.max(0, at - Date.now()),
    );
  };

  /** Starts applies while slots are free and messages are ready. */
  function pump(): void {
    if (stopping) return;
    const now = Date.now();
    if (now < holdUntil) return scheduleWake(holdUntil);
    while (running < slots) {
      const entry = queue.next(now);
      if (!entry) break;
      running++;
      const applying: Promise<void> = apply(entry).finally(() => {
        running--;
        inFlight.delete(applying);
        throttle(entry.message.topic, entry.message.partition);
        pump();
      });
      inFlight.add(applying);
    }
    const wake = queue.nextWakeup();
    if (wake !== undefined) scheduleWake(wake);
  }

  async function apply(entry: Entry): Promise<void> {
    const { message } = entry;
    const origin = originOf(message);
    const started = performance.now();
    try {
      await inSpan(
        `apply ${message.topic}`,
        {
          parent: extractFrom(message.headers),
          kind: SpanKind.CONSUMER,
          attributes: {
            'messaging.system': 'kafka',
            'messaging.destination.name': message.topic,
            'messaging.kafka.offset': Number(message.offset),
            'messaging.destination.partition.id': String(message.partition),
          },
        },
        async () => {
          await kind.apply(message, deps);
          log.info({ origin, durationMs: Math.round((performance.now() - started) * 10) / 10 }, 'message applied');
        },
      );
      outages = 0;
      queue.done(entry);
      metrics.messages(kind.name, 'applied', 1);
      metrics.applyDuration(kind.name, (performance.now() - started) / 1000);
    } catch (err) {
      await failed(entry, asError(err), Math.round(performance.now() - started));
    }
  }

  async function failed(entry: Entry, error: Error, durationMs: number): Promise<void> {
    const { message } = entry;
    const origin = originOf(message);
    if (error instanceof EdgeRecordPending) {
      entry.edgeWaits++;
      queue.retryAt(entry, Date.now() + backoffMs(schedules.edgeRecordWait, entry.edgeWaits));
      return;
    }
    const verdict = classifyFailure(error);
    metrics.messages(kind.name, 'failed_attempt', 1);
    if (verdict === 'outage') {
      holdUntil = Date.now() + backoffMs(schedules.dependencyWait, ++outages);
      log.warn({ err: error, origin, verdict, outage: true, durationMs }, 'worker attempt failed');
      queue.retryAt(entry, holdUntil);
      return;
    }
    entry.failures++;
    log.warn({ err: error, origin, verdict, failures: entry.failures, durationMs }, 'worker attempt failed');
    if (verdict === 'transient' && mayRetry(schedule, entry.failures)) {
      queue.retryAt(entry, Date.now() + backoffMs(schedule, entry.failures));
      return;
    }
    try {
      await deadLetter(message, error, verdict);
      queue.done(entry);
    } catch (dlqError) {
      // Kafka (or the kind's report) is away: the message stays unapplied and uncommitted.
      log.warn({ err: dlqError, origin }, 'dead-lettering failed; trying the message again later');
      holdUntil = Date.now() + backoffMs(schedules.dependencyWait, ++outages);
      queue.retryAt(entry, holdUntil);
    }
  }

  async function deadLetter(message: InboundMessage, error: Error, verdict: FailureClass): Promise<void> {
    const origin = originOf(message);
    await deps.bus.produce(deadLetterTopic(message.topic), [
      {
        key: message.key ?? '',
        value: message.value ?? '',
        headers: {
          ...message.headers,
          [deadLetterHeaders.error]: error.message.slice(0, 1000),
          [deadLetterHeaders.origin]: origin,
          [deadLetterHeaders.worker]: kind.name,
          [deadLetterHeaders.errorClass]: errorClassOf(error, verdict),
        },
      },
    ]);
    log.error({ err: error, origin }, 'message dead-lettered');
    metrics.messages(kind.name, 'dead_lettered', 1);
    await reportDeadLetter(message, error);
  }

  /**
   * Tells the kind (e.g. marks the import job failed). PostgreSQL being briefly away must not
   * leave the record unmarked, so this is retried like an apply; a report that still fails is
   * logged (the message is safe in the dead-letter topic) and the message counts as done.
   */
  async function reportDeadLetter(message: InboundMessage, error: Error): Promise<void> {
    if (!kind.onDeadLetter) return;
    for (let failures = 0, waits = 0; ;) {
      try {
        return await kind.onDeadLetter(message, error, deps);
      } catch (err) {
        const verdict = classifyFailure(err);
        if (verdict !== 'outage') failures++;
        if (verdict === 'permanent' || !mayRetry(schedule, failures)) {
          log.error({ err, origin: originOf(message) }, 'dead-lettered message could not be reported to its kind');
          return;
        }
        // Stopping: left uncommitted, so the next owner dead-letters and reports it again.
        if (stopping) throw err;
        await pause(backoffMs(verdict === 'outage' ? schedules.dependencyWait : schedule, ++waits));
      }
    }
  }

  let committing: Promise<void> | undefined;
  const commit = () => {
    if (committing) return committing;
    const offsets = queue.takeCommits();
    if (offsets.length === 0) return Promise.resolve();
    committing = group
      .commit(offsets)
      .then(
        () => queue.committed(offsets),
        (err: unknown) => log.debug({ err }, 'offset commit failed; trying again with the next'),
      )
      .finally(() => (committing = undefined));
    return committing;
  };

  await deps.bus.ensureTopics(topicsWithDeadLetters(kind, deps.config.kafka));
  await group.run(
    topics.map((t) => t.topic),
    {
      deliver(messages) {
        const first = messages[0]!;
        queue.add(messages);
        throttle(first.topic, first.partition);
        pump();
      },
      reset() {
        queue.reset();
        pausedPartitions.clear(); // the group resumed them
      },
    },
  );
  const commitTimer = setInterval(() => void commit(), commitEveryMs);
  commitTimer.unref();

  return {
    async stop() {
      stopping = true;
      clearInterval(commitTimer);
      clearTimeout(wakeTimer);
      await Promise.allSettled([...inFlight]);
      await committing;
      await commit();
      await group.stop();
    },
  };
}
