// One consumer group over kafkajs consumers that are replaced when kafkajs gives one up: on a
// CRASH while a broker is away (as after its coordinator broker died: issue 29; kafkajs is told
// never to restart one itself, bus.ts), or silently (kafkajs issue #659: a consumer alive but
// fetching nothing, with no event at all).
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { Logger } from '../logger.js';
import { backoffMs, pause, schedules } from '../retry.js';
import { withTimeout } from '../timeout.js';
import { isBrokerUnreachable } from './availability.js';

export type InboundMessage = {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, string>;
};

/**
 * Where a consumer group hands what it fetches. The group never waits for messages to be applied:
 * it fetches on while the receiver decides what to apply when (workers/fair-queue.ts), pauses a
 * partition whose unapplied messages fill its share of memory, and commits what was applied.
 */
export type Feed = {
  /** One fetched batch of one partition, in offset order. Must return at once (apply elsewhere). */
  deliver(messages: InboundMessage[]): void;
  /**
   * The group's assignment changed (a rebalance) or a fresh consumer took over: every partition
   * is fetched again from its committed offset, so drop what was delivered and not yet applied.
   */
  reset(): void;
};

export type PartitionOffset = { topic: string; partition: number; offset: string };

export interface ConsumerGroup {
  run(topics: string[], feed: Feed): Promise<void>;
  /** Stops fetching one partition (its delivered messages wait to be applied) until resume(). */
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
  /** Commits each partition's next offset to read (everything before it is applied). */
  commit(offsets: PartitionOffset[]): Promise<void>;
  /** Leaves the group (commit first: what is not committed is fetched again by the next owner). */
  stop(): Promise<void>;
  onCrash(listener: (error: Error) => void): void;
}

export type ConsumerGroupOptions = {
  sessionTimeoutMs?: number;
  /**
   * A running consumer that shows no sign of life this long, with no batch in hand, is replaced
   * by a fresh one. Unset or 0: max(90 s, 3 × sessionTimeoutMs), since a healthy kafkajs consumer
   * fetches at least every 0.25 s (maxWaitTimeInMs, bus.ts) and a rebalance may take up to 60 s.
   */
  stallTimeoutMs?: number;
};

/**
 * How long stop() waits for its consumer to leave the group. A consumer kafkajs is restarting (or
 * one stuck in a join) may never finish disconnecting; the process must still stop within its
 * shutdown timeout. Left without it, the broker drops the member after its session timeout, and
 * what was not committed is fetched again by the next owner (applied idempotently).
 */
export const stopDisconnectMs = 5000;

// kafkajs throws from pause/resume while a fresh consumer has not joined yet: nothing is
// fetched then anyway, and a join resets the feed.
const tryTo = (f: () => void) => {
  try {
    f();
  } catch {
    /* see above */
  }
};

// Instrumentation events a working consumer emits at least every few seconds.
const signsOfLife = [
  'FETCH_START',
  'FETCH',
  'GROUP_JOIN',
  'HEARTBEAT',
  'START_BATCH_PROCESS',
  'END_BATCH_PROCESS',
] as const;

/**
 * The group's lifecycle. Only the consumer the state holds is heeded (crash, join, signs of life)
 * and paused, resumed or committed through. †: a crash while a broker is away (any other goes to
 * the crash listener and changes no state).
 *   idle ─run─▶ starting ─started─▶ running ─crash†, stall─▶ restartDue ─backoff─▶ replacing
 *   replacing ─given-up one disconnected─▶ starting ─failed─▶ idle (run() rejects) or restartDue
 *   starting ─crash†─▶ restartDue (the start goes on)            any ─stop─▶ stopped
 */
type State =
  | { name: 'idle' | 'stopped' } // idle: before run(), or after a start failed
  | { name: 'starting' | 'running'; consumer: Consumer } // starting: connecting and joining
  | { name: 'restartDue'; consumer?: Consumer; backoff: AbortController } // the given-up one, if any
  | { name: 'replacing'; consumer?: Consumer }; // disconnecting the given-up one

export function createConsumerGroup({
  newConsumer,
  discarded = () => undefined,
  groupId,
  log,
  options = {},
}: {
  /** A fresh kafkajs consumer of the group (each start makes one). */
  newConsumer: () => Consumer;
  /** Told of a consumer this group has disconnected (or given up disconnecting) for good. */
  discarded?: (consumer: Consumer) => void;
  groupId: string;
  log: Logger;
  options?: ConsumerGroupOptions;
}): ConsumerGroup {
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 30_000;
  const stallTimeoutMs = options.stallTimeoutMs || Math.max(90_000, 3 * sessionTimeoutMs);
  let state: State = { name: 'idle' };
  const current = () => ('consumer' in state ? state.consumer : undefined);
  let subscription: { topics: string[]; feed: Feed } | undefined; // run()'s
  let restarts = 0; // since the last start that succeeded: the backoff's count
  let crashListener: (error: Error) => void = () => undefined;
  const paused = new Map<string, { topic: string; partitions: number[] }>();
  let lastSignOfLife = Date.now();
  const alive = () => (lastSignOfLife = Date.now());

  const makeConsumer = () => {
    const made = newConsumer();
    made.on(made.events.CRASH, (event) => onCrash(made, event.payload.error));
    // A new generation fetches every partition from its committed offset again.
    made.on(made.events.GROUP_JOIN, () => {
      if (made === current()) resetFeed(made);
    });
    for (const name of signsOfLife) {
      made.on(made.events[name], () => {
        if (made === current()) alive();
      });
    }
    return made;
  };

  // A stuck consumer's disconnect waits for its stuck fetch loop: give up waiting after a while
  // (the broker has dropped a member silent for sessionTimeoutMs by then anyway).
  const discard = async (old: Consumer, waitMs = sessionTimeoutMs) => {
    discarded(old);
    await withTimeout(old.disconnect(), waitMs, 'disconnecting a consumer').catch(() => undefined);
  };

  // idle or replacing → starting → running. A crashed consumer is not reliably started again, so a
  // start always makes a fresh one (the group, its committed offsets and our handler stay the same).
  const start = async () => {
    if (state.name === 'stopped') throw new Error(`consumer group ${groupId} is stopped`);
    const fresh = makeConsumer();
    state = { name: 'starting', consumer: fresh };
    alive();
    try {
      await fresh.connect();
      await fresh.subscribe({ topics: subscription!.topics, fromBeginning: true });
      // stop() disconnected it while it connected: it must not start consuming now.
      if (current() !== fresh) throw new Error(`consumer group ${groupId} stopped while a consumer started`);
      resetFeed(); // a fresh consumer starts from the committed offsets
      await fresh.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
      restarts = 0;
      if (state.name === 'starting' && state.consumer === fresh) state = { name: 'running', consumer: fresh };
    } catch (err) {
      // Not left connected (nor in the bus's set) when the caller tries again with another.
      if (state.name === 'starting' && state.consumer === fresh) state = { name: 'idle' };
      await discard(fresh);
      throw err;
    }
  };

  // running, starting (its consumer crashed) or idle (a restart's start failed) → restartDue. In
  // any other state a fresh consumer is due or under way already.
  const restartLater = () => {
    if (state.name !== 'running' && state.name !== 'starting' && state.name !== 'idle') return;
    const backoff = new AbortController(); // stop() cuts the wait short
    state = { name: 'restartDue', consumer: current(), backoff };
    void pause(backoffMs(schedules.consumerRestart, ++restarts), backoff.signal).then(replace);
  };

  // restartDue → replacing → starting: the given-up consumer leaves the group before a fresh one joins.
  const replace = async () => {
    if (state.name !== 'restartDue') return;
    const old = state.consumer;
    state = { name: 'replacing', consumer: old };
    if (old) await discard(old);
    await start().catch((err: unknown) => {
      if (state.name !== 'idle') return; // stopped, or its consumer crashed and a restart is due
      log.warn({ err, groupId }, 'consumer could not start again yet; retrying');
      restartLater();
    });
  };

  // kafkajs gives a consumer up on errors of a broker that is away (e.g. "Failed to find group
  // coordinator" while it restarts, "the coordinator is loading"). That is no reason for the
  // process to die: start a fresh consumer, with backoff from 0.5 s, until the broker answers
  // (kafkajs's own restart, switched off in bus.ts, waited its last retry's delay: 10 s and more
  // after a coordinator died). Other crashes go to the listener (the runner exits, and its
  // supervisor restarts it).
  function onCrash(crashed: Consumer, error: Error): void {
    if (state.name === 'stopped' || crashed !== current()) return;
    if (isBrokerUnreachable(error)) {
      log.warn({ err: error, groupId }, 'consumer stopped while a broker is away; starting a fresh one');
      restartLater();
    } else {
      crashListener(error);
    }
  }

  // A fresh assignment starts unpaused; the receiver pauses partitions again as it fills.
  const resetFeed = (running?: Consumer) => {
    if (running) for (const p of paused.values()) tryTo(() => running.resume([p]));
    paused.clear();
    subscription?.feed.reset();
  };

  // running → restartDue when silent. Fetching never waits for applies, so a live consumer fetches
  // (or heartbeats) every few seconds; a restart under way has its own backoff.
  const checkForStall = () => {
    if (state.name !== 'running') return;
    const silentMs = Date.now() - lastSignOfLife;
    if (silentMs < stallTimeoutMs) return;
    log.warn(
      { groupId, silentMs },
      `consumer showed no sign of life for ${Math.round(silentMs / 1000)} s; starting a fresh one`,
    );
    restartLater();
  };
  const watchdog = setInterval(checkForStall, Math.min(5000, Math.ceil(stallTimeoutMs / 4))).unref();

  const eachBatch = async ({ batch, resolveOffset, isRunning, isStale }: EachBatchPayload) => {
    if (!isRunning() || isStale() || batch.messages.length === 0) return;
    subscription!.feed.deliver(toInbound(batch));
    // Only moves the fetch position: autoCommit is off, so nothing is committed before the
    // receiver says it was applied (commit()).
    resolveOffset(batch.lastOffset());
  };

  const toInbound = (batch: EachBatchPayload['batch']): InboundMessage[] =>
    batch.messages.map((m) => ({
      topic: batch.topic,
      partition: batch.partition,
      offset: m.offset,
      key: m.key ? m.key.toString() : null,
      value: m.value,
      headers: Object.fromEntries(
        Object.entries(m.headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? String(v[0]) : String(v)]),
      ),
    }));

  return {
    async run(topics, feed) {
      subscription = { topics, feed };
      await start();
    },
    pause(topic, partition) {
      const key = `${topic}/${partition}`;
      if (paused.has(key) || !current()) return;
      const p = { topic, partitions: [partition] };
      paused.set(key, p);
      tryTo(() => current()!.pause([p]));
    },
    resume(topic, partition) {
      const p = paused.get(`${topic}/${partition}`);
      if (!p) return;
      paused.delete(`${topic}/${partition}`);
      tryTo(() => current()?.resume([p]));
    },
    async commit(offsets) {
      if (offsets.length > 0) await current()?.commitOffsets(offsets);
    },
    async stop() {
      const consumer = current();
      if (state.name === 'restartDue') state.backoff.abort();
      state = { name: 'stopped' };
      clearInterval(watchdog);
      if (consumer) await discard(consumer, stopDisconnectMs);
    },
    onCrash(listener) {
      crashListener = listener;
    },
  };
}
