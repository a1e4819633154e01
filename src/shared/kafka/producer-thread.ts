// A kafkajs producer in a worker thread, for large sends. kafkajs encodes a produce request,
// checksums it (CRC32C in JavaScript) and writes it to the socket on the thread that calls
// send(): for a 16 MiB batch that is tens of milliseconds per megabyte-sized request on the
// gateway's event loop, stalling every other client's requests and /livez. Here that work runs
// on a thread of its own, and its queue of large sends is not the queue small writes wait in.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import type { OutboundMessage } from './message-bus.js';
import { plaintext, type KafkaSecurity } from './client-security.js';

export type SerialisedError = { name: string; message: string; retriable: boolean; cause?: SerialisedError };
export type ThreadMessage = { key: string; value: string | Uint8Array; headers?: Record<string, string> };
/** deadline: epoch ms after which a send still queued in the thread is not made. */
export type SendRequest = { id: number; topic: string; messages: ThreadMessage[]; deadline: number };
export type SendReply = { id: number; error?: SerialisedError };
export type ThreadLog = { level: 'error' | 'warn' | 'debug' | 'trace'; message: string; extra: object };

export type ThreadedProducer = {
  send(topic: string, messages: OutboundMessage[], deadline: number): Promise<void>;
  close(): Promise<void>;
};

function threadFile(): URL {
  const js = new URL('./producer-thread-worker.js', import.meta.url);
  return existsSync(fileURLToPath(js)) ? js : new URL('./producer-thread-boot.mjs', import.meta.url);
}

/** An Error the owner's classification (isBrokerUnreachable) reads as the thread's was. */
function revive(e: SerialisedError): Error {
  const err = new Error(e.message, e.cause ? { cause: revive(e.cause) } : undefined);
  return Object.assign(err, { name: e.name, retriable: e.retriable });
}

/** Buffers that own their memory move to the thread; others (pool slices, strings) are copied. */
function transferable(m: OutboundMessage): ArrayBuffer | null {
  const v = m.value;
  if (typeof v === 'string' || v.byteOffset !== 0 || v.byteLength !== v.buffer.byteLength) return null;
  return v.buffer as ArrayBuffer;
}

export function createThreadedProducer(opts: {
  brokers: string[];
  clientId: string;
  security?: KafkaSecurity;
  log: Logger;
}): ThreadedProducer {
  let worker: Worker | null = null;
  let nextId = 1;
  const pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

  const start = (): Worker => {
    const w = new Worker(threadFile(), {
      workerData: { brokers: opts.brokers, clientId: opts.clientId, security: opts.security ?? plaintext },
    });
    w.on('message', (msg: SendReply | { log: ThreadLog }) => {
      if ('log' in msg) {
        opts.log[msg.log.level]({ ...msg.log.extra, kafkajs: true, thread: 'producer' }, msg.log.message);
        return;
      }
      const waiter = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) waiter?.reject(revive(msg.error));
      else waiter?.resolve();
    });
    // A thread that died takes its sends with it: fail them (the callers answer 503) and start
    // a fresh thread on the next send.
    const fail = (err: Error) => {
      if (worker === w) worker = null;
      for (const waiter of pending.values()) waiter.reject(err);
      pending.clear();
    };
    w.on('error', (err) => {
      opts.log.error({ err }, 'kafka producer thread failed');
      fail(err);
    });
    w.on('exit', (code) => fail(new Error(`kafka producer thread exited (${code})`)));
    w.unref(); // sends in hand keep the process alive through their promises, not the thread
    return w;
  };

  return {
    send(topic, messages, deadline) {
      worker ??= start();
      const id = nextId++;
      const transfer = messages.map(transferable).filter((b): b is ArrayBuffer => b !== null);
      const request: SendRequest = { id, topic, messages, deadline };
      return new Promise<void>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker!.postMessage(request, transfer);
      });
    },
    async close() {
      const w = worker;
      worker = null;
      if (!w) return;
      const exited = new Promise((r) => w.once('exit', r));
      w.postMessage('close');
      const timer = setTimeout(() => void w.terminate(), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
