import { describe, expect, it } from 'vitest';
import { EdgeTransactions, causeOfEdgeWait } from '../../src/gateway/edge/edge-wait.js';

/** Returns once performance.now() has moved on: what happens next is strictly later. */
const tick = () => {
  const t = performance.now();
  while (performance.now() <= t);
};

const full = {
  kafkaAvailable: true,
  max: 4,
  held: 4,
  onKafka: 0,
  onKafkaThroughout: 0,
  committedDuringWait: false,
  kafkaFailedDuringWait: false,
};

describe('why a write got no edge connection', () => {
  it('names Kafka, PostgreSQL or busy', () => {
    expect(causeOfEdgeWait({ ...full, kafkaAvailable: false })).toBe('Kafka');
    expect(causeOfEdgeWait({ ...full, held: 1 })).toBe('PostgreSQL'); // a free slot, no connection opened
    expect(causeOfEdgeWait({ ...full, onKafka: 4 })).toBe('Kafka'); // all stuck on acknowledgements
    expect(causeOfEdgeWait({ ...full, onKafka: 2 })).toBe('Kafka');
    expect(causeOfEdgeWait({ ...full, onKafka: 1 })).toBe('PostgreSQL'); // stuck on statements or locks
    expect(causeOfEdgeWait({ ...full, onKafka: 4, committedDuringWait: true })).toBe('busy');
    expect(causeOfEdgeWait({ ...full, committedDuringWait: true })).toBe('busy');
    // Most held on Kafka for the whole wait while the rest committed: a partition without its leader.
    expect(causeOfEdgeWait({ ...full, onKafka: 3, onKafkaThroughout: 2, committedDuringWait: true })).toBe('Kafka');
    expect(causeOfEdgeWait({ ...full, onKafka: 3, onKafkaThroughout: 1, committedDuringWait: true })).toBe('busy');
    // A produce gave up meanwhile (KAFKA_PRODUCE_TIMEOUT_MS shorter than the wait): Kafka.
    expect(causeOfEdgeWait({ ...full, onKafka: 1, committedDuringWait: true, kafkaFailedDuringWait: true })).toBe(
      'Kafka',
    );
  });

  it('counts held transactions, those waiting on Kafka, and commits since a wait began', () => {
    const t = new EdgeTransactions();
    const a = t.begin();
    const b = t.begin();
    b.waitingOnKafka(true);
    tick();
    const since = performance.now();
    tick();
    expect(t.snapshot(since)).toEqual({
      held: 2,
      onKafka: 1,
      onKafkaThroughout: 1,
      committedDuringWait: false,
      kafkaFailedDuringWait: false,
    });
    a.waitingOnKafka(true); // began waiting after `since`: not throughout
    expect(t.snapshot(since)).toEqual({
      held: 2,
      onKafka: 2,
      onKafkaThroughout: 1,
      committedDuringWait: false,
      kafkaFailedDuringWait: false,
    });
    a.waitingOnKafka(false);
    a.committed();
    a.release();
    expect(t.snapshot(since)).toEqual({
      held: 1,
      onKafka: 1,
      onKafkaThroughout: 1,
      committedDuringWait: true,
      kafkaFailedDuringWait: false,
    });
    b.kafkaFailed();
    b.release();
    expect(t.snapshot(since).kafkaFailedDuringWait).toBe(true);
    expect(t.snapshot(performance.now() + 1)).toEqual({
      held: 0,
      onKafka: 0,
      onKafkaThroughout: 0,
      committedDuringWait: false,
      kafkaFailedDuringWait: false,
    });
  });
});
