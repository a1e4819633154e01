// One consumer group over kafkajs consumers that are replaced when kafkajs gives one up: for
// good while the broker is away (a CRASH it does not restart), or silently (kafkajs issue #659:
// a consumer alive but fetching nothing, with no event at all).
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { Logger } from '../logger.js';
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

export type BatchContext = {
  /** Throws PartitionsRevokedError when this member must give the batch up (rebalance, broker gone). */
  heartbeat(): Promise<void>;
  isStopping(): boolean;
};

/**
 * The group took this batch's partition away (a member joined or left, the coordinator moved) or
 * the broker stopped answering heartbeats: abandon the batch, uncommitted, so the group's next
 * owner applies it again (applies are idempotent). Never a verdict on the messages.
 */
export class PartitionsRevokedError extends Error {
  constructor(readonly reason: unknown) {
    super(`partition ownership lost: ${(reason as Error)?.message ?? String(reason)}`);
  }
}

/** Handles one fetched batch of one partition; throwing means "not processed, fetch again". */
export type BatchHandler = (messages: InboundMessage[], ctx: BatchContext) => Promise<void>;

export interface ConsumerGroup {
  run(topics: string[], handler: BatchHandler): Promise<void>;
  /** Waits for the batch in hand, commits its offsets and leaves the group. */
  stop(): Promise<void>;
  onCrash(listener: (error: Error) => void): void;
}

export type ConsumerGroupOptions = {
  maxBytesPerPartition?: number;
  sessionTimeoutMs?: number;
  partitionsConcurrently?: number;
  /**
   * A running consumer that shows no sign of life this long, with no batch in hand, is replaced
   * by a fresh one. Unset or 0: max(90 s, 3 × sessionTimeoutMs), since a healthy kafkajs consumer
   * fetches at least every 5 s (maxWaitTimeInMs) and a rebalance may take up to 60 s.
   */
  stallTimeoutMs?: number;
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
  let consumer: Consumer | undefined;
  let stopping = false;
  let start: (() => Promise<void>) | null = null;
  let crashListener: (error: Error) => void = () => undefined;
  let restarts = 0;
  // Restarts scheduled or under way (a crash during a start schedules the next one meanwhile).
  let restartsPending = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let batchesInHand = 0;
  let lastSignOfLife = Date.now();
  const alive = () => (lastSignOfLife = Date.now());

  // A crashed consumer is not reliably started again, so a start always makes a fresh one (the
  // group, its committed offsets and our handler stay the same).
  const makeConsumer = () => {
    const made = newConsumer();
    made.on(made.events.CRASH, (event) => onCrash(made, event.payload.error, event.payload.restart));
    for (const name of signsOfLife) {
      made.on(made.events[name], () => {
        if (made === consumer) alive();
      });
    }
    return made;
  };

  // A stuck consumer's disconnect waits for its stuck fetch loop: give up waiting after a while
  // (the broker has dropped a member silent for sessionTimeoutMs by then anyway).
  const discard = async (old: Consumer) => {
    discarded(old);
    await withTimeout(old.disconnect(), sessionTimeoutMs, 'disconnecting a consumer').catch(() => undefined);
  };

  const restartLater = () => {
    if (restartTimer) return; // one is already due (e.g. the watchdog's, when a crash comes too)
    restartsPending++;
    const delayMs = Math.min(30_000, 500 * 2 ** Math.min(restarts++, 6));
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopping || !start) return;
      (consumer ? discard(consumer) : Promise.resolve())
        .then(() => start!())
        .then(
          () => (restarts = 0),
          (err: unknown) => {
            if (stopping) return;
            log.warn({ err, groupId }, 'consumer could not start again yet; retrying');
            restartLater();
          },
        )
        .finally(() => restartsPending--);
    }, delayMs);
    restartTimer.unref();
  };

  // kafkajs gives a consumer up for good on some errors of a broker that is away (e.g. "Failed to
  // find group coordinator" while it restarts). That is no reason for the process to die: start
  // a fresh consumer, with backoff, until the broker answers. Other crashes go to the listener
  // (the runner exits, and its supervisor restarts it).
  function onCrash(crashed: Consumer, error: Error, kafkajsRestarts: boolean): void {
    if (kafkajsRestarts || stopping || crashed !== consumer) return;
    if (isBrokerUnreachable(error)) {
      log.warn({ err: error, groupId }, 'consumer stopped while the broker is away; starting it again');
      restartLater();
    } else {
      crashListener(error);
    }
  }

  // A batch in hand may legitimately take long (it heartbeats); a restart under way has its own
  // backoff. Otherwise silence means the consumer stalled without telling anyone.
  const checkForStall = () => {
    if (stopping || restartsPending > 0 || batchesInHand > 0) return;
    const silentMs = Date.now() - lastSignOfLife;
    if (silentMs < stallTimeoutMs) return;
    log.warn(
      { groupId, silentMs },
      `consumer showed no sign of life for ${Math.round(silentMs / 1000)} s; starting a fresh one`,
    );
    restartLater();
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
    async run(topics, handler) {
      const eachBatch = async (payload: EachBatchPayload) => {
        const { batch, heartbeat, resolveOffset, commitOffsetsIfNecessary, isRunning, isStale } = payload;
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        try {
          await handler(toInbound(batch), {
            heartbeat: () => {
              alive();
              return heartbeat().catch((err: unknown) => {
                throw new PartitionsRevokedError(err);
              });
            },
            isStopping: () => stopping || !isRunning(),
          });
        } catch (err) {
          if (!(err instanceof PartitionsRevokedError)) throw err;
          // Stopping: leave the batch unresolved (uncommitted) and let disconnect go on.
          if (stopping || !isRunning()) return;
          // kafkajs rejoins the group on its own rebalance errors: hand it the original.
          throw err.reason;
        }
        resolveOffset(batch.lastOffset());
        await commitOffsetsIfNecessary();
      };
      start = async () => {
        const fresh = makeConsumer();
        consumer = fresh;
        alive();
        try {
          await fresh.connect();
          await fresh.subscribe({ topics, fromBeginning: true });
          // stop() disconnected it while it connected: it must not start consuming now.
          if (stopping) throw new Error(`consumer group ${groupId} stopped while a consumer started`);
          await fresh.run({
            // Batches of different partitions are applied side by side (each still in order).
            partitionsConsumedConcurrently: options.partitionsConcurrently ?? 1,
            autoCommit: true,
            eachBatchAutoResolve: false,
            eachBatch: async (payload) => {
              batchesInHand++;
              try {
                await eachBatch(payload);
              } finally {
                batchesInHand--;
              }
            },
          });
        } catch (err) {
          // Not left connected (nor in the bus's set) when the caller tries again with another.
          if (consumer === fresh) consumer = undefined;
          await discard(fresh);
          throw err;
        }
      };
      await start();
      if (!watchdog && !stopping) {
        const checkEveryMs = Math.min(5000, Math.ceil(stallTimeoutMs / 4));
        watchdog = setInterval(checkForStall, checkEveryMs);
        watchdog.unref();
      }
    },
    async stop() {
      stopping = true;
      clearInterval(watchdog);
      clearTimeout(restartTimer);
      if (!consumer) return;
      const current = consumer;
      await current.disconnect(); // waits for the running batch, then commits
      discarded(current);
    },
    onCrash(listener) {
      crashListener = listener;
    },
  };
}
