import { afterAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/shared/errors.js';
import { fromThreadError, threadPool, toThreadError } from '../../src/shared/threads.js';
import type { EchoInput } from '../support/threads/echo-task.js';

// The one way code runs off the event loop (src/shared/threads.ts): a task's value and its errors
// come back the same way from every pool.

const pool = threadPool({
  task: new URL('../support/threads/echo-task.js', import.meta.url),
  maxThreads: 1,
  idleTimeoutMs: 60_000,
  data: { brokers: ['b1:9092'] },
  errorClasses: [AppError],
});
afterAll(() => pool.close());
const run = <T>(input: EchoInput, options?: { signal?: AbortSignal; transfer?: ArrayBuffer[] }) =>
  pool.run<T>(input, options);

describe('thread errors', () => {
  it('keep class (when the caller names it), message, data fields and causes', () => {
    const err = new AppError('validation_failed', 'bad', { targets: ['x'] }, { limit: 3 }, 7);
    const back = fromThreadError(structuredClone(toThreadError(err)), [AppError]);
    expect(back).toBeInstanceOf(AppError);
    expect(back).toMatchObject({ code: 'validation_failed', kind: 'invalid', message: 'bad', retryAfterSeconds: 7 });
    expect((back as AppError).fieldErrors).toEqual({ targets: ['x'] });

    const unnamed = fromThreadError(structuredClone(toThreadError(err)));
    expect(unnamed).not.toBeInstanceOf(AppError);
    expect(unnamed).toBeInstanceOf(Error);
    expect(unnamed).toMatchObject({ code: 'validation_failed', message: 'bad' });
  });

  it('leave behind fields that cannot be cloned, and non-errors become their text', () => {
    const err = Object.assign(new Error('x'), { retriable: true, socket: () => 1 });
    expect(toThreadError(err).fields).toEqual({ retriable: true });
    expect(toThreadError('plain text')).toEqual({ className: 'Error', message: 'plain text', fields: {} });
  });
});

describe('threadPool', () => {
  it('gives the task its data and returns its value, a handed-over buffer intact', async () => {
    expect(pool.started()).toBe(false);
    const { data } = await run<{ data: unknown }>({ op: 'data' });
    expect(data).toEqual({ brokers: ['b1:9092'] });
    expect(pool.started()).toBe(true);
    const bytes = new Uint8Array([1, 2, 3]);
    const echoed = await run<{ bytes: Uint8Array }>({ op: 'echo', bytes }, { transfer: [bytes.buffer] });
    expect(bytes.byteLength).toBe(0); // handed over, not copied
    expect([...echoed.bytes]).toEqual([1, 2, 3]);
  });

  it('rejects with an AppError the caller named, fields intact', async () => {
    const err = await run({ op: 'app-error' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({
      code: 'validation_failed',
      message: 'bad body',
      fieldErrors: { targets: ['too many'] },
      details: { limit: 3 },
    });
  });

  it('rejects with an error its owner classifies as the thread’s was: name, retriable and cause', async () => {
    const err = (await run({ op: 'kafka-error' }).catch((e: unknown) => e)) as Error & { retriable: boolean };
    expect(err).toMatchObject({ name: 'KafkaJSNumberOfRetriesExceeded', message: 'gave up', retriable: false });
    expect(err).not.toHaveProperty('socket');
    expect(err.cause).toMatchObject({ name: 'KafkaJSConnectionError', message: 'Connection timeout', retriable: true });
  });

  it('rejects with the signal’s reason on abort and terminates the busy thread', async () => {
    const first = await run<{ threadId: number }>({ op: 'spin', ms: 0 });
    const controller = new AbortController();
    const spinning = run({ op: 'spin', ms: 600_000 }, { signal: controller.signal });
    pool.onMessage((m) => {
      if ((m as { spinning?: number }).spinning === first.threadId) controller.abort(new Error('client went away'));
    });
    await expect(spinning).rejects.toThrow('client went away');
    // The next task runs at once, in a fresh thread: the spinning one was terminated.
    const next = await run<{ threadId: number }>({ op: 'spin', ms: 0 });
    expect(next.threadId).not.toBe(first.threadId);
  });
});
