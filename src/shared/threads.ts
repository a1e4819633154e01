// The one way this service runs code off the event loop: a piscina pool per kind of work (batch
// parsing, large Kafka sends, route drafts). The same pool loads a task module compiled (dist) or
// from the TypeScript sources (tests, `npm run gateway`), and brings a task's errors back in one
// shape, so the caller's classification reads them as the thread's were.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';

/** An error as it crosses threads: its class, message, stack, own data fields and causes. */
export type ThreadError = {
  className: string;
  message: string;
  stack?: string;
  fields: Record<string, unknown>;
  cause?: ThreadError;
};

type Reply<Out> = { ok: true; value: Out } | { ok: false; error: ThreadError };

/** The fields of an error that survive the trip (a kafkajs error's `retriable`, an AppError's
 *  `code` and `fieldErrors`); a field that cannot be cloned (a socket, a function) stays behind. */
function cloneableFields(err: object): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err)) {
    if (key === 'cause' || key === 'message' || key === 'stack') continue;
    try {
      fields[key] = structuredClone(value);
    } catch {
      // not cloneable: left out
    }
  }
  return fields;
}

export function toThreadError(err: unknown, depth = 0): ThreadError {
  if (!(err instanceof Error)) return { className: 'Error', message: String(err), fields: {} };
  return {
    className: err.constructor.name,
    message: err.message,
    stack: err.stack,
    fields: cloneableFields(err),
    cause: err.cause !== undefined && depth < 4 ? toThreadError(err.cause, depth + 1) : undefined,
  };
}

type ErrorClass = abstract new (...args: any[]) => Error;

/** The thread's error as an instance of its class when the caller names it (so `instanceof
 *  AppError` holds), else as an Error with the same name, fields and causes. */
export function fromThreadError(e: ThreadError, classes: readonly ErrorClass[] = []): Error {
  const cls = classes.find((c) => c.name === e.className) ?? Error;
  const err = Object.create(cls.prototype) as Error;
  Object.assign(err, { message: e.message, stack: e.stack }, e.fields);
  if (e.cause) err.cause = fromThreadError(e.cause, classes);
  return err;
}

/**
 * The thread side: a task module's default export. What the task returns comes back as its
 * value, the buffers `transferOf` names handed over instead of copied; what it throws comes back
 * as a ThreadError.
 */
export function threadTask<In, Out>(
  run: (input: In) => Out | Promise<Out>,
  transferOf?: (value: Out) => ArrayBuffer[],
): (input: In) => Promise<unknown> {
  return async (input) => {
    try {
      const value = await run(input);
      const reply: Reply<Out> = { ok: true, value };
      const transfer = transferOf?.(value) ?? [];
      if (transfer.length === 0) return reply;
      return Piscina.move({
        [Piscina.transferableSymbol]: transfer,
        [Piscina.valueSymbol]: reply,
      } as unknown as ArrayBuffer);
    } catch (err) {
      return { ok: false, error: toThreadError(err) } satisfies Reply<Out>;
    }
  };
}

/** In a thread: the `data` its pool was created with. */
export const threadData = <T>(): T => (Piscina.workerData as { data: T }).data;

/** The ArrayBuffer to hand over when the bytes own all of it; null for a slice of a larger one
 *  (small Buffers share a pool), which must be copied instead. */
export const ownBuffer = (bytes: Uint8Array): ArrayBuffer | null =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? (bytes.buffer as ArrayBuffer) : null;

/** Bytes that own their whole ArrayBuffer, so it can be handed over (a slice is copied into one of its own). */
export const owning = (bytes: Uint8Array): Uint8Array => (ownBuffer(bytes) ? bytes : new Uint8Array(bytes));

export type ThreadPoolOptions = {
  /** The task module, as its compiled name beside the caller: new URL('./x-task.js', import.meta.url). */
  task: URL;
  maxThreads: number;
  /** How long an idle thread is kept (Infinity: a thread holding connections). */
  idleTimeoutMs: number;
  /** Tasks a thread runs at once: more than one only for tasks that wait on I/O. */
  concurrentTasksPerThread?: number;
  heapMb?: number;
  /** What threadData() gives each thread. */
  data?: unknown;
  /** Error classes revived as themselves (see fromThreadError). */
  errorClasses?: readonly ErrorClass[];
};

export type ThreadPool = {
  run<Out>(input: unknown, options?: { signal?: AbortSignal; transfer?: ArrayBuffer[] }): Promise<Out>;
  /** Whether any thread has started (a pool starts its threads on first use). */
  started(): boolean;
  /** What the threads post on their parentPort besides replies (log lines). */
  onMessage(listener: (message: unknown) => void): void;
  close(): Promise<void>;
};

/** From the sources the thread must load TypeScript, and a Worker does not inherit the caller's
 *  loader (nodejs/node#47747): thread-boot.mjs registers tsx in the thread, then imports it. */
function taskFile(task: URL): { filename: string; module: string } {
  if (existsSync(fileURLToPath(task))) return { filename: task.href, module: task.href };
  const ts = task.href.replace(/\.js$/, '.ts');
  return { filename: new URL('./thread-boot.mjs', import.meta.url).href, module: ts };
}

export function threadPool(opts: ThreadPoolOptions): ThreadPool {
  const { filename, module } = taskFile(opts.task);
  const pool = new Piscina({
    filename,
    workerData: { module, data: opts.data },
    minThreads: 0,
    maxThreads: opts.maxThreads,
    idleTimeout: opts.idleTimeoutMs,
    concurrentTasksPerWorker: opts.concurrentTasksPerThread ?? 1,
    // A thread that waits on sockets between tasks must keep its event loop running.
    atomics: (opts.concurrentTasksPerThread ?? 1) > 1 ? 'disabled' : 'sync',
    resourceLimits: opts.heapMb ? { maxOldGenerationSizeMb: opts.heapMb } : undefined,
  });
  return {
    async run<Out>(input: unknown, options: { signal?: AbortSignal; transfer?: ArrayBuffer[] } = {}) {
      const { signal, transfer } = options;
      let reply: Reply<Out>;
      try {
        reply = (await pool.run(input, { signal, transferList: transfer })) as Reply<Out>;
      } catch (err) {
        // Aborted: the caller's own reason (piscina wraps it; a running thread is terminated).
        if (signal?.aborted) throw signal.reason;
        throw err;
      }
      if (reply.ok) return reply.value;
      throw fromThreadError(reply.error, opts.errorClasses);
    },
    started: () => pool.threads.length > 0,
    onMessage(listener) {
      pool.on('message', listener);
    },
    close: () => pool.destroy(),
  };
}
