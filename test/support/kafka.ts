import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createKafkaBus, type Feed, type InboundMessage, type MessageBus } from '../../src/shared/kafka/bus.js';
import { createLogger } from '../../src/shared/logger.js';
import { scaled } from './time-scale.js';

export const uniqueName = (base: string) => `${base}-${randomBytes(4).toString('hex')}`;

export function testBus(brokers = inject('kafkaBrokers')): MessageBus {
  return createKafkaBus({
    brokers: brokers.split(','),
    clientId: uniqueName('test'),
    logger: createLogger('warn', 'test-kafka'),
    // Several MB per send in some tests; a loaded CI host (another suite on the same broker) can
    // take longer than the product's 10 s default.
    produceTimeoutMs: scaled(30_000),
  });
}

/**
 * Polls until check() returns a value other than undefined, or fails after timeoutMs (an
 * idle-machine figure, scaled by the run's measured time scale).
 */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
  /** What is waited for, in the error (a function: said as it is when the wait gives up). */
  what: string | (() => string) = 'condition',
): Promise<T> {
  const started = Date.now();
  const deadline = started + scaled(timeoutMs);
  const said = () => (typeof what === 'function' ? what() : what);
  for (;;) {
    const value = await check();
    if (value !== undefined) {
      // A wait that took over a quarter of its time says so: a later flaky timeout has a trail.
      const took = Date.now() - started;
      if (took > scaled(timeoutMs) / 4) console.warn(`slow wait: ${said()} took ${took} ms`);
      return value;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${said()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A consumer group feed for tests that only read a topic: each message once (a rebalance makes
 * the group deliver uncommitted messages again; nothing is committed here).
 */
export function reading(onMessages: (messages: InboundMessage[]) => void): Feed {
  const seen = new Set<string>();
  return {
    deliver(messages) {
      const fresh = messages.filter((m) => {
        const id = `${m.topic}/${m.partition}/${m.offset}`;
        if (seen.has(id)) return false;
        seen.add(id);
        return true;
      });
      if (fresh.length > 0) onMessages(fresh);
    },
    reset: () => undefined,
  };
}
