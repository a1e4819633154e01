import { Writable } from 'node:stream';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { startTracing } from '../../src/shared/tracing/tracing.js';
import { inboundExpressWorker, inboundWorker } from '../../src/workers/inbound/kind.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/start-workers.js';
import { bearer } from '../support/fixtures.js';
import { eventually } from '../support/kafka.js';
import { useGatewaySuite } from '../support/suite.js';
import { makeTargets } from '../support/targets.js';

// Issue 13: one inbound batch is one trace from the gateway's request to the worker's apply (W3C
// traceparent in the Kafka headers), and the log lines of both carry its trace id and the
// request's correlation id. Spans go to an in-memory exporter (exporting is off by default).
const exporter = new InMemorySpanExporter();
const tracing = startTracing('connect-test', { exporter });
const suite = useGatewaySuite({ env: () => ({ LOG_LEVEL: 'info' }) });
const workerLines: string[] = [];
let workers: RunningWorkers;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      workerLines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  workers = await startWorkers({
    config: suite.config,
    logger: createLogger('info', 'test-workers', sink),
    kinds: [inboundWorker, inboundExpressWorker],
  });
});

afterAll(async () => {
  await workers?.stop();
  await tracing.shutdown();
});

type Line = { msg?: string; traceId?: string; spanId?: string; correlationId?: string; origin?: string };
const lines = (raw: string[]) => raw.map((l) => JSON.parse(l) as Line);

describe('tracing', () => {
  it('makes one inbound batch one trace across the gateway and the worker, ids in both logs', async () => {
    const key = suite.demo.clients.all!.apiKey;
    const res = await suite.api.post('/api/v1/inbound/targets/batch', {
      headers: { ...bearer(key), 'X-Correlation-Id': 'trace-test-1' },
      body: { sourceSystem: 'tracing', targets: makeTargets(30, 'trace') },
    });
    expect(res.status, res.text).toBe(200);
    await eventually(async () => {
      const job = await suite.api.get(`/api/v1/import-jobs/${res.body.importJobId}`, { headers: bearer(key) });
      return job.body.status === 'Completed' ? true : undefined;
    }, 60_000);

    const spans = await eventually(() => {
      const finished = exporter.getFinishedSpans();
      const applied = (s: (typeof finished)[number]) =>
        s.name.startsWith('apply ') && s.status.code !== SpanStatusCode.ERROR;
      return finished.some(applied) ? finished : undefined;
    }, 30_000);
    const request = spans.find((s) => s.kind === SpanKind.SERVER && s.name === 'POST /api/v1/inbound/targets/batch')!;
    expect(request, 'the gateway request span').toBeDefined();
    const traceId = request.spanContext().traceId;
    // 30 targets: the express lane's topic (inbound.targets.express).
    const applies = spans.filter((s) => s.name.startsWith(`apply ${suite.config.kafka.topicPrefix}inbound.targets`));
    expect(applies.length, 'worker spans').toBeGreaterThan(0);
    for (const apply of applies) {
      expect(apply.spanContext().traceId).toBe(traceId);
      expect(apply.parentSpanContext?.spanId, 'the worker continues the request span').toBe(
        request.spanContext().spanId,
      );
      expect(apply.kind).toBe(SpanKind.CONSUMER);
    }

    const accessLine = lines(suite.gateway.logLines().map((l) => JSON.stringify(l))).find(
      (l) => l.msg === 'request' && l.correlationId === 'trace-test-1',
    );
    expect(accessLine?.traceId, 'the gateway access log line carries the trace id').toBe(traceId);
    // An attempt that came before the gateway committed the edge record (EdgeRecordPending, see
    // workers/edge-record.ts) is a span with an error and no "message applied" line.
    const succeeded = applies.filter((s) => s.status.code !== SpanStatusCode.ERROR);
    expect(succeeded.length, 'applies that succeeded').toBeGreaterThan(0);
    const applied = lines(workerLines).filter((l) => l.msg === 'message applied' && l.traceId === traceId);
    expect(applied.length, 'worker "message applied" lines of this trace').toBe(succeeded.length);
    for (const line of applied) expect(line.correlationId).toBe('trace-test-1');
  });

  it("continues a client's traceparent", async () => {
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await suite.api.get('/api/v1/import-jobs', {
      headers: { ...bearer(suite.demo.clients.all!.apiKey), traceparent: `00-${clientTrace}-00f067aa0ba902b7-01` },
    });
    expect(res.status).toBe(200);
    const span = exporter.getFinishedSpans().find((s) => s.name === 'GET /api/v1/import-jobs');
    expect(span?.spanContext().traceId).toBe(clientTrace);
    expect(span?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
  });
});
