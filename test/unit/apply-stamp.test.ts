import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { applyStamp, stampAssignments, stampPlaceholders, stampValues } from '../../src/workers/apply-stamp.js';

const message = (headers: Record<string, string>) => ({
  topic: 'connect.jobs',
  partition: 2,
  offset: '41',
  key: 'k',
  value: null,
  headers,
});

describe('apply stamp', () => {
  it("names the message's position, its producer's trace and the worker process", () => {
    const config = loadConfig({ WORKER_ID: 'pod-7' });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(
      applyStamp(message({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }), '2026-11-26T10:00:00.000Z', { config }),
    ).toEqual({
      topic: 'connect.jobs',
      partition: 2,
      offset: '41',
      producedAt: '2026-11-26T10:00:00.000Z',
      handledBy: 'pod-7',
      traceId,
    });
  });

  it('without WORKER_ID names the host and pid; without a trace header and outside a span, no trace', () => {
    const stamp = applyStamp(message({ traceparent: 'garbage' }), null, { config: loadConfig({}) });
    expect(stamp.handledBy).toMatch(new RegExp(`:${process.pid}$`));
    expect(stamp.traceId).toBeNull();
  });

  it('lines up its values with the placeholders of an INSERT and the assignments of an UPDATE', () => {
    const values = stampValues(applyStamp(message({}), null, { config: loadConfig({ WORKER_ID: 'w' }) }));
    expect(stampPlaceholders(5)).toBe('$5, $6, $7, $8, $9, $10');
    expect(values).toHaveLength(6);
    expect(stampAssignments(2)).toBe(
      'kafka_topic = $2, kafka_partition = $3, kafka_offset = $4, produced_at = $5, handled_by = $6, trace_id = $7, how = $8, handled_at = now()',
    );
  });
});
