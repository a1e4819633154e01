import { describe, expect, it } from 'vitest';
import { isBrokerUnreachable, trackBrokerAvailability } from '../../src/shared/kafka/availability.js';
import { TimeoutError, withTimeout } from '../../src/shared/timeout.js';

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((r) => setTimeout(r, 1));
};

describe('broker availability', () => {
  it('stays down after a failed send until a probe answers, probing on a timer', async () => {
    let probes = 0;
    let brokerUp = false;
    const changes: boolean[] = [];
    const broker = trackBrokerAvailability({
      probe: async () => {
        probes++;
        if (!brokerUp) throw new Error('ECONNREFUSED');
      },
      probeIntervalMs: 1,
      onChange: (up) => changes.push(up),
    });
    expect(broker.available()).toBe(true);
    broker.markDown(new Error('produce timed out after 10 ms'));
    broker.markDown(new Error('again')); // one outage, one report
    expect(broker.available()).toBe(false);
    await until(() => probes >= 3);
    expect(broker.available()).toBe(false);
    brokerUp = true;
    await until(() => broker.available());
    expect(changes).toEqual([false, true]);
    broker.close();
  });

  it('after a timed-out send, stays up if a probe at once answers, and goes down if it does not', async () => {
    let probes = 0;
    let brokerUp = true;
    const changes: boolean[] = [];
    const broker = trackBrokerAvailability({
      probe: async () => {
        probes++;
        if (!brokerUp) throw new Error('kafka probe timed out after 2000 ms');
      },
      probeIntervalMs: 60_000, // only the check itself probes in this test
      onChange: (up) => changes.push(up),
    });
    broker.suspect(new Error('produce to t timed out after 10 ms'));
    broker.suspect(new Error('again')); // one check at a time
    await until(() => probes === 1);
    await new Promise((r) => setTimeout(r, 5));
    expect(broker.available()).toBe(true);
    expect(probes).toBe(1);

    brokerUp = false;
    broker.suspect(new Error('produce to t timed out after 10 ms'));
    await until(() => !broker.available());
    expect(probes).toBe(2);
    expect(changes).toEqual([false]);
    broker.close();
  });

  it('a check whose probe fails after close() starts no probing', async () => {
    let fail: (err: Error) => void = () => undefined;
    let probes = 0;
    const broker = trackBrokerAvailability({
      probe: () => {
        probes++;
        return new Promise<void>((_, reject) => (fail = reject));
      },
      probeIntervalMs: 1,
    });
    broker.suspect(new Error('produce to t timed out after 10 ms'));
    broker.close();
    fail(new Error('ECONNREFUSED'));
    await new Promise((r) => setTimeout(r, 20));
    expect(broker.available()).toBe(true);
    expect(probes).toBe(1);
  });

  it('tells a missing broker from a refused message', async () => {
    const ours = await withTimeout(new Promise(() => undefined), 1, 'produce to t').catch((err: unknown) => err);
    expect(ours).toBeInstanceOf(TimeoutError);
    expect(isBrokerUnreachable(ours)).toBe(true);
    // A message that reads like ours is not ours: only the class says so.
    expect(isBrokerUnreachable(new Error('produce to t timed out after 3000 ms'))).toBe(false);
    expect(isBrokerUnreachable(Object.assign(new Error('Connection error'), { name: 'KafkaJSConnectionError' }))).toBe(
      true,
    );
    expect(
      isBrokerUnreachable(Object.assign(new Error('too large'), { name: 'KafkaJSProtocolError', retriable: false })),
    ).toBe(false);
  });
});

describe('a consumer crash while the broker is away', () => {
  it('is recognised through kafkajs wrapping (non-retriable "Failed to find group coordinator")', () => {
    const cause = Object.assign(new Error('Failed to find group coordinator'), {
      name: 'KafkaJSGroupCoordinatorNotFound',
      retriable: false,
    });
    const crash = Object.assign(new Error('Failed to find group coordinator'), {
      name: 'KafkaJSNonRetriableError',
      retriable: false,
      cause,
    });
    expect(isBrokerUnreachable(crash)).toBe(true);
    expect(isBrokerUnreachable(Object.assign(new Error('bad'), { name: 'TypeError' }))).toBe(false);
  });
});
