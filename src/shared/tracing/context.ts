// What travels with a unit of work (a request, a message's processing): its span and its
// correlation id, in the OpenTelemetry context (AsyncLocalStorage), so log lines and produced
// messages pick them up without passing them around. One place to write them into Kafka
// headers and read them back.
import {
  context,
  createContextKey,
  isSpanContextValid,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
} from '@opentelemetry/api';

const correlationKey = createContextKey('connect.correlation_id');
/** The Kafka header that carries the correlation id next to `traceparent`. */
export const correlationHeader = 'correlation-id';

export const withCorrelation = (ctx: Context, correlationId: string | null | undefined): Context =>
  correlationId ? ctx.setValue(correlationKey, correlationId) : ctx;

/** For log lines: the active trace, span and correlation ids, when there are. */
export function logContext(): { traceId?: string; spanId?: string; correlationId?: string } {
  const active = context.active();
  const span = trace.getSpan(active)?.spanContext();
  const correlationId = active.getValue(correlationKey) as string | undefined;
  const out: { traceId?: string; spanId?: string; correlationId?: string } = {};
  if (span && isSpanContextValid(span)) {
    out.traceId = span.traceId;
    out.spanId = span.spanId;
  }
  if (correlationId) out.correlationId = correlationId;
  return out;
}

/** Adds the active trace (`traceparent`, `tracestate`) and correlation id to a message's headers. */
export function injectInto(headers: Record<string, string> = {}): Record<string, string> {
  const out = { ...headers };
  propagation.inject(context.active(), out);
  const correlationId = context.active().getValue(correlationKey) as string | undefined;
  if (correlationId) out[correlationHeader] = correlationId;
  return out;
}

/** The context a consumed message's headers carry (its producer's span as parent, its correlation id). */
export function extractFrom(headers: Record<string, string | undefined>): Context {
  const carrier = Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined));
  return withCorrelation(propagation.extract(context.active(), carrier), carrier[correlationHeader]);
}

/**
 * Runs work in a new span (a child of parent's) with parent's correlation id; the span ends when
 * the work settles, marked as an error when it throws.
 */
export async function inSpan<T>(
  name: string,
  options: { parent?: Context; kind?: SpanKind; attributes?: Attributes },
  work: () => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = trace
    .getTracer('connect-integration')
    .startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), work);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}

export { SpanKind };
