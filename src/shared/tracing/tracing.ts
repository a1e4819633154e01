// OpenTelemetry tracing, set up once per process. Spans are always made, so every log line of a
// request or of a message's processing carries its trace id, and the trace travels through Kafka
// in W3C `traceparent` headers. They leave the process only when the standard variables say so:
// OTEL_TRACES_EXPORTER=otlp (OTEL_EXPORTER_OTLP_ENDPOINT / _TRACES_ENDPOINT, OTEL_SERVICE_NAME …)
// or console; unset or `none`: nothing is exported. OTEL_SDK_DISABLED=true: no spans at all.
import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';

export type Tracing = { shutdown(): Promise<void> };

function exporterFromEnv(env: NodeJS.ProcessEnv): SpanExporter | null {
  const names = (env.OTEL_TRACES_EXPORTER ?? 'none').split(',').map((s) => s.trim());
  if (names.includes('otlp')) return new OTLPTraceExporter();
  if (names.includes('console')) return new ConsoleSpanExporter();
  return null;
}

/**
 * Registers the process's tracer provider (AsyncLocalStorage context, W3C trace context).
 * `exporter`: a test's own (spans handed over at once); otherwise from the environment.
 */
export function startTracing(
  service: string,
  options: { exporter?: SpanExporter; env?: NodeJS.ProcessEnv } = {},
): Tracing {
  const env = options.env ?? process.env;
  if (env.OTEL_SDK_DISABLED === 'true') return { shutdown: async () => undefined };
  const processors: SpanProcessor[] = [];
  if (options.exporter) processors.push(new SimpleSpanProcessor(options.exporter));
  else {
    const exporter = exporterFromEnv(env);
    if (exporter) processors.push(new BatchSpanProcessor(exporter));
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || service }),
    spanProcessors: processors,
    // Nothing exported: spans are not recorded (no attributes, events or processors to feed),
    // yet each still gets its ids, so log lines and Kafka headers carry the trace as before.
    // Exporting: the SDK's default sampler, or OTEL_TRACES_SAMPLER.
    ...(processors.length === 0 ? { sampler: new AlwaysOffSampler() } : {}),
  });
  provider.register();
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
    },
  };
}
