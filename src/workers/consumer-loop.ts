import { deadLetterHeaders, deadLetterTopic, errorClassOf } from '../shared/dead-letters/headers.js';
import { classifyFailure, type FailureClass } from '../shared/db/errors.js';
import type { ConsumerGroup, InboundMessage } from '../shared/kafka/bus.js';
import { backoffMs, mayRetry, pause, retrying, schedules, type RetrySchedule } from '../shared/retry.js';
import { extractFrom, inSpan, SpanKind } from '../shared/tracing/context.js';
import { NewerMessageVersion } from './decode.js';
import { EdgeRecordPending } from './edge-record.js';
import { FairQueue, type Entry } from './fair-queue.js';
import { topicsWithDeadLetters, type WorkerDeps, type WorkerKind } from './worker-kind.js';

const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));
const isOutage = (err: unknown) => classifyFailure(err) === 'outage';

/** How often applied offsets are committed (a crash re-applies at most this much, idempotently). */
const commitEveryMs = 1000;

export type RunningKind = {
  /** Applies nothing more, waits for the applies under way, commits, and leaves the group. */
  stop(): Promise<void>;
};

/**
 * The loop's state (as consumer-group.ts keeps the group's):
 *   applying ─an attempt finds a dependency away─▶ dependencyAway ─an apply succeeds─▶ applying
 *   applying, dependencyAway ─stop─▶ stopping (the applies under way finish, then commit and leave)
 * While a dependency is away, the queue hands nothing out before its backoff has passed
 * (FairQueue.retryAt, scope 'all'): every apply would fail the same way.
 */
type LoopState =
  | { name: 'applying' }
  | { name: 'dependencyAway'; outages: number } // attempts in a row that found it away: the backoff's count
  | { name: 'stopping' };

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
 *   `messageRetry`'s backoff, up to its attempts, then dead-lettered; meanwhile only later
 *   messages of its key wait;
 * - outage (PostgreSQL not serving writes: unreachable, restarting, read-only during a
 *   failover, isPostgresUnavailable; or not migrated): no verdict, no attempt used, never
 *   dead-lettered; nothing is tried until a dependencyWait backoff has passed (every apply would
 *   fail the same way);
 * - EdgeRecordPending (its edge record is not committed yet), NewerMessageVersion (written by
 *   the next release during a rolling upgrade): tried again after an edgeRecordWait backoff,
 *   holding only its key (never dead-lettered).
 * Offsets are committed only up to the oldest message not yet applied; a rebalance drops what is
 * not running (the next owner fetches it again). Nothing is dropped silently.
 */
export async function runWorkerKind({
  kind,
  group,
  deps,
  messageRetry = schedules.messageRetry,
}: {
  kind: WorkerKind;
  group: ConsumerGroup;
  deps: WorkerDeps;
  /** A message's transient failures: waits and attempts before it is dead-lettered. */
  messageRetry?: RetrySchedule;
}): Promise<RunningKind> {
  const log = deps.logger.child({ worker: kind.name });
  const { metrics } = deps;
  const topics = kind.topics(deps.config.kafka);
  const slots = deps.config.workers.applyConcurrency;
  const queue = new FairQueue();
  const originOf = (m: InboundMessage) => `${m.topic}/${m.partition}/${m.offset}`;
  const inFlight = new Set<Promise<void>>();
  const stopped = new AbortController(); // cuts short the waits of the dead-letter report and the committer
  let wakeTimer: NodeJS.Timeout | undefined; // for the queue's next waiting message

  let state: LoopState = { name: 'applying' };
  // applying, dependencyAway → dependencyAway: the entry, and every other, waits a longer backoff.
  const dependencyAway = (entry: Entry) => {
    const outages = state.name === 'dependencyAway' ? state.outages + 1 : 1;
    if (state.name !== 'stopping') state = { name: 'dependencyAway', outages };
    queue.retryAt(entry, Date.now() + backoffMs(schedules.dependencyWait, outages), 'all');
  };
  // dependencyAway → applying.
  const dependencyBack = () => {
    if (state.name === 'dependencyAway') state = { name: 'applying' };
  };
  // applying, dependencyAway → stopping.
  const stopApplying = () => {
    state = { name: 'stopping' };
    stopped.abort();
    clearTimeout(wakeTimer);
  };
  /** Only this message's key waits: its retry's backoff, or its edge record. */
  const retryLater = (entry: Entry, schedule: RetrySchedule, failures: number) =>
    queue.retryAt(entry, Date.now() + backoffMs(schedule, failures));

  // Memory: a partition whose unapplied bytes pass its share of WORKER_BUFFER_BYTES is paused (the
  // group keeps the paused set; pause and resume are no-ops when already so).
  const throttle = (topic: string, partition: number) => {
    const share = deps.config.workers.bufferBytes / Math.max(1, queue.partitionCount);
    const bytes = queue.bufferedBytes(topic, partition);
    if (bytes > share) group.pause(topic, partition);
    else if (bytes <= share / 2) group.resume(topic, partition);
  };

  /** Starts applies while slots are free and messages are ready. */
  function pump(): void {
    if (state.name === 'stopping') return;
    const now = Date.now();
    while (inFlight.size < slots) {
      const entry = queue.next(now);
      if (!entry) break;
      const applying: Promise<void> = apply(entry).finally(() => {
        inFlight.delete(applying);
        throttle(entry.message.topic, entry.message.partition);
        pump();
      });
      inFlight.add(applying);
    }
    // Set again each time: nextWakeup is the earliest of the whole queue.
    clearTimeout(wakeTimer);
    const next = queue.nextWakeup(now);
    if (next !== undefined) wakeTimer = setTimeout(pump, next - Date.now());
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
      dependencyBack();
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
    if (error instanceof EdgeRecordPending) return retryLater(entry, schedules.edgeRecordWait, ++entry.edgeWaits);
    if (error instanceof NewerMessageVersion) {
      if (entry.edgeWaits === 0)
        log.warn({ err: error, origin }, 'message of a newer release: waiting for a worker that reads it');
      return retryLater(entry, schedules.edgeRecordWait, ++entry.edgeWaits);
    }
    const verdict = classifyFailure(error);
    metrics.messages(kind.name, 'failed_attempt', 1);
    if (verdict === 'outage') {
      log.warn({ err: error, origin, verdict, outage: true, durationMs }, 'worker attempt failed');
      return dependencyAway(entry);
    }
    entry.failures++;
    log.warn({ err: error, origin, verdict, failures: entry.failures, durationMs }, 'worker attempt failed');
    if (verdict === 'transient' && mayRetry(messageRetry, entry.failures)) {
      return retryLater(entry, messageRetry, entry.failures);
    }
    try {
      await deadLetter(message, error, verdict);
      queue.done(entry);
    } catch (dlqError) {
      // Kafka (or the kind's report) is away: the message stays unapplied and uncommitted.
      log.warn({ err: dlqError, origin }, 'dead-lettering failed; trying the message again later');
      dependencyAway(entry);
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
   * leave the record unmarked, so this is retried like an apply (an outage waited out without
   * using an attempt); a report that still fails is logged (the message is safe in the
   * dead-letter topic) and the message counts as done.
   */
  async function reportDeadLetter(message: InboundMessage, error: Error): Promise<void> {
    if (!kind.onDeadLetter) return;
    const { signal } = stopped;
    const report = () => kind.onDeadLetter!(message, error, deps);
    const whileAway = () => retrying(schedules.dependencyWait, report, { retriable: isOutage, signal });
    try {
      await retrying(messageRetry, whileAway, { retriable: (err) => classifyFailure(err) === 'transient', signal });
    } catch (err) {
      // Stopping: left uncommitted, so the next owner dead-letters and reports it again.
      if (signal.aborted && classifyFailure(err) !== 'permanent') throw err;
      log.error({ err, origin: originOf(message) }, 'dead-lettered message could not be reported to its kind');
    }
  }

  /** Commits what was applied; one at a time, so commits never overtake each other. */
  const commitApplied = async () => {
    const offsets = queue.takeCommits();
    if (offsets.length === 0) return;
    await group.commit(offsets).then(
      () => queue.committed(offsets),
      (err: unknown) => log.debug({ err }, 'offset commit failed; trying again with the next'),
    );
  };
  const commitEverySecond = async () => {
    while (!stopped.signal.aborted) {
      await pause(commitEveryMs, stopped.signal);
      await commitApplied();
    }
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
      reset: () => queue.reset(), // the group resumed every partition
    },
  );
  const committer = commitEverySecond();

  return {
    async stop() {
      stopApplying();
      await Promise.allSettled([...inFlight]);
      await committer;
      await commitApplied();
      await group.stop();
    },
  };
}
