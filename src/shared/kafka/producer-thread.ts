// A kafkajs producer in a worker thread, for large sends. kafkajs encodes a produce request
// (copying each value through several buffers), checksums it and writes it to the socket on the
// thread that calls send(): for a 16 MiB batch, about 4 ms of CPU per megabyte even with the
// native checksum (kafkajs.ts), which on the event loop would stall every other client's requests
// and /livez. Here that work runs on a thread of its own, and its queue of large sends is not the
// queue small writes wait in.
import type { Logger } from '../logger.js';
import { ownBuffer, threadPool } from '../threads.js';
import { withTimeout } from '../timeout.js';
import type { OutboundMessage } from './message-bus.js';
import { plaintext, type KafkaSecurity } from './client-security.js';

export type ThreadConfig = { brokers: string[]; clientId: string; security: KafkaSecurity };
export type ThreadMessage = { key: string; value: string | Uint8Array; headers?: Record<string, string> };
/** deadline: epoch ms after which a send still queued in the thread is not made. */
export type ProducerTask = { op: 'send'; topic: string; messages: ThreadMessage[]; deadline: number } | { op: 'close' };
export type ThreadLog = { level: 'error' | 'warn' | 'debug' | 'trace'; message: string; extra: object };

export type ThreadedProducer = {
  send(topic: string, messages: OutboundMessage[], deadline: number): Promise<void>;
  close(): Promise<void>;
};

/** Buffers that own their memory move to the thread; others (pool slices, strings) are copied. */
const transferable = (m: OutboundMessage): ArrayBuffer | null =>
  typeof m.value === 'string' ? null : ownBuffer(m.value);

/** Sends waiting in the thread at once; the serial producer queues them per partition. */
const sendsInThread = 1024;

export function createThreadedProducer(opts: {
  brokers: string[];
  clientId: string;
  security?: KafkaSecurity;
  log: Logger;
}): ThreadedProducer {
  // One thread, kept while the process runs (it holds the producer's connections). A thread that
  // dies fails the sends it held (the callers answer 503) and the next send starts a fresh one.
  const pool = threadPool({
    task: new URL('./producer-thread-worker.js', import.meta.url),
    maxThreads: 1,
    idleTimeoutMs: Infinity,
    concurrentTasksPerThread: sendsInThread,
    data: {
      brokers: opts.brokers,
      clientId: opts.clientId,
      security: opts.security ?? plaintext,
    } satisfies ThreadConfig,
  });
  pool.onMessage((message) => {
    const { log } = message as { log: ThreadLog };
    opts.log[log.level]({ ...log.extra, kafkajs: true, thread: 'producer' }, log.message);
  });
  return {
    send: (topic, messages, deadline) =>
      pool.run({ op: 'send', topic, messages, deadline } satisfies ProducerTask, {
        transfer: messages.map(transferable).filter((b): b is ArrayBuffer => b !== null),
      }),
    async close() {
      // The producer leaves the broker first (bounded: a hung disconnect must not hold shutdown).
      if (pool.started())
        await withTimeout(pool.run({ op: 'close' } satisfies ProducerTask), 5000, 'the producer thread closing').catch(
          (err) => opts.log.warn({ err }, 'kafka producer thread did not close its producer; stopping it'),
        );
      await pool.close();
    },
  };
}
