import { describe, expect, it } from 'vitest';
import { EdgeTransactions, causeOfEdgeWait } from '../../src/gateway/edge/edge-wait.js';

const full = { kafkaAvailable: true, max: 4, held: 4, onKafka: 0, committedDuringWait: false };

describe('why a write got no edge connection', () => {
  it('names Kafka, PostgreSQL or busy', () => {
    expect(causeOfEdgeWait({ ...full, kafkaAvailable: false })).toBe('Kafka');
    expect(causeOfEdgeWait({ ...full, held: 1 })).toBe('PostgreSQL'); // a free slot, no connection opened
    expect(causeOfEdgeWait({ ...full, onKafka: 4 })).toBe('Kafka'); // all stuck on acknowledgements
    expect(causeOfEdgeWait({ ...full, onKafka: 2 })).toBe('Kafka');
    expect(causeOfEdgeWait({ ...full, onKafka: 1 })).toBe('PostgreSQL'); // stuck on statements or locks
    expect(causeOfEdgeWait({ ...full, onKafka: 4, committedDuringWait: true })).toBe('busy');
    expect(causeOfEdgeWait({ ...full, committedDuringWait: true })).toBe('busy');
  });

  it('counts held transactions, those waiting on Kafka, and commits since a wait began', () => {
    const t = new EdgeTransactions();
    const a = t.begin();
    const b = t.begin();
    b.waitingOnKafka(true);
    const since = performance.now();
    expect(t.snapshot(since)).toEqual({ held: 2, onKafka: 1, committedDuringWait: false });
    a.committed();
    a.release();
    expect(t.snapshot(since)).toEqual({ held: 1, onKafka: 1, committedDuringWait: true });
    b.release();
    expect(t.snapshot(performance.now() + 1)).toEqual({ held: 0, onKafka: 0, committedDuringWait: false });
  });
});
