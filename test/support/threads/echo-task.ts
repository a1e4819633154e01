// A thread task for test/unit/threads.test.ts: answers, throws or waits as its input says.
import { parentPort, threadId } from 'node:worker_threads';
import { AppError } from '../../../src/shared/errors.js';
import { threadData, threadTask } from '../../../src/shared/threads.js';

export type EchoInput =
  | { op: 'echo'; bytes: Uint8Array }
  | { op: 'data' }
  | { op: 'app-error' }
  | { op: 'kafka-error' }
  | { op: 'spin'; ms: number };

export default threadTask(
  async (input: EchoInput) => {
    switch (input.op) {
      case 'echo':
        return { bytes: new Uint8Array(input.bytes), threadId };
      case 'data':
        return { data: threadData<unknown>(), threadId };
      case 'app-error':
        throw new AppError('validation_failed', 'bad body', { targets: ['too many'] }, { limit: 3 }, null);
      case 'kafka-error': {
        const cause = Object.assign(new Error('Connection timeout'), {
          name: 'KafkaJSConnectionError',
          retriable: true,
        });
        throw Object.assign(new Error('gave up', { cause }), {
          name: 'KafkaJSNumberOfRetriesExceeded',
          retriable: false,
          socket: () => 'not cloneable',
        });
      }
      case 'spin': {
        parentPort!.postMessage({ spinning: threadId });
        const until = Date.now() + input.ms;
        while (Date.now() < until); // holds the thread: only terminating it stops this
        return { threadId };
      }
    }
  },
  (value) => (value.bytes ? [value.bytes.buffer as ArrayBuffer] : []),
);
