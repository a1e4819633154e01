import { describe, expect, it } from 'vitest';
import { isBrokerUnreachable, trackBrokerAvailability } from '../../src/shared/kafka/availability.js';

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

  it('tells a missing broker from a refused message', () => {
    expect(isBrokerUnreachable(new Error('produce to t timed out after 3000 ms'))).toBe(true);
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
