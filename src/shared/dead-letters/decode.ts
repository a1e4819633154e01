import type { StoredMessage } from '../kafka/bus.js';
import { envelopeSchema, tenantHeader } from '../messages.js';
import { deadLetterHeaders } from './headers.js';
import type { DeadLetterKind, RecordType } from './kinds.js';

/** A dead letter's id: its dead-letter kind, partition and offset in the dead-letter topic. */
export const deadLetterId = (kind: string, partition: number, offset: string | number) =>
  `${kind}/${partition}/${offset}`;

/** A dead letter as lists show it. */
export type DeadLetter = {
  id: string;
  kind: string;
  dlqTopic: string;
  partition: number;
  offset: string;
  deadLetteredAt: string;
  /** Where it was when it failed. */
  origin: { topic: string; partition: number | null; offset: string | null };
  worker: string | null;
  error: string | null;
  /** `<verdict>/<SQLSTATE or error name>`, `unknown` for dead letters written before the header. */
  errorClass: string;
  tenantId: string | null;
  clientId: string | null;
  record: { type: RecordType; id: string; chunkIndex?: number } | null;
  /** Set on a dead letter of a replayed message that failed again: the dead letter it was replayed from. */
  replayOf: string | null;
};

/** What `show` adds: every header, the key and a summary of the payload (never the whole of it). */
export type DeadLetterDetail = DeadLetter & {
  key: string | null;
  headers: Record<string, string>;
  payload: {
    bytes: number;
    decoded: boolean;
    type?: string;
    version?: number;
    producedAt?: string;
    requestId?: string | null;
    correlationId?: string | null;
    summary?: Record<string, unknown>;
    /** Why the envelope does not decode. */
    problem?: string;
  };
};

/** The envelope of a message: an inbound chunk's header line, else the whole value as JSON. */
function readEnvelope(value: Buffer | null): { envelope?: ReturnType<typeof envelopeSchema.parse>; problem?: string } {
  if (!value || value.length === 0) return { problem: 'empty message' };
  const newline = value.indexOf(10);
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8', 0, newline < 0 ? value.length : newline));
  } catch {
    return { problem: 'not JSON' };
  }
  const parsed = envelopeSchema.safeParse(json);
  if (!parsed.success) return { problem: `not an envelope: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
  return { envelope: parsed.data };
}

const origin = (header: string | undefined, fallbackTopic: string): DeadLetter['origin'] => {
  const m = header ? /^(.*)\/(\d+)\/(\d+)$/.exec(header) : null;
  return m
    ? { topic: m[1]!, partition: Number(m[2]), offset: m[3]! }
    : { topic: fallbackTopic, partition: null, offset: null };
};

/** Counts and identities of a payload, by what it holds (items are counted, never shown). */
function summarise(payload: unknown, value: Buffer): Record<string, unknown> {
  if (typeof payload !== 'object' || payload === null) return {};
  const summary: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) {
    if (Array.isArray(v)) summary[`${k}Count`] = v.length;
    else if (typeof v !== 'object' || v === null) summary[k] = v;
  }
  // An inbound chunk's items are rows after its header line.
  const newline = value.indexOf(10);
  if (newline >= 0 && summary.itemCount === undefined) summary.rowBytes = value.length - newline - 1;
  return summary;
}

export function decodeDeadLetter(kind: DeadLetterKind, m: StoredMessage): DeadLetterDetail {
  const { envelope, problem } = readEnvelope(m.value);
  const payload = (envelope?.payload ?? {}) as Record<string, unknown>;
  const recordId = payload[kind.idField];
  const chunkIndex = payload.chunkIndex;
  return {
    id: deadLetterId(kind.name, m.partition, m.offset),
    kind: kind.name,
    dlqTopic: m.topic,
    partition: m.partition,
    offset: m.offset,
    deadLetteredAt: m.timestamp.toISOString(),
    origin: origin(m.headers[deadLetterHeaders.origin], kind.topic),
    worker: m.headers[deadLetterHeaders.worker] ?? null,
    error: m.headers[deadLetterHeaders.error] ?? null,
    errorClass: m.headers[deadLetterHeaders.errorClass] ?? 'unknown',
    tenantId: envelope?.tenantId ?? m.headers[tenantHeader] ?? null,
    clientId: envelope?.clientId ?? null,
    record:
      typeof recordId === 'string' || typeof recordId === 'number'
        ? {
            type: kind.record,
            id: String(recordId),
            ...(typeof chunkIndex === 'number' ? { chunkIndex } : {}),
          }
        : null,
    replayOf: m.headers[deadLetterHeaders.replayOf] ?? null,
    key: m.key,
    headers: m.headers,
    payload: {
      bytes: m.value?.length ?? 0,
      decoded: envelope !== undefined,
      ...(envelope
        ? {
            type: envelope.type,
            version: envelope.version,
            producedAt: envelope.producedAt,
            requestId: envelope.requestId,
            correlationId: envelope.correlationId,
            summary: summarise(envelope.payload, m.value!),
          }
        : { problem }),
    },
  };
}

/** The list view of a dead letter: without headers, key and payload. */
export function listed(d: DeadLetterDetail): DeadLetter {
  const { key: _key, headers: _headers, payload: _payload, ...rest } = d;
  return rest;
}
