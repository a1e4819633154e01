// Where a message came from and who handled it, written with what it did (admin CLI `trace`).
import type { Config } from '../shared/config.js';
import type { InboundMessage } from '../shared/kafka/bus.js';
import { logContext } from '../shared/tracing/context.js';

export type ApplyStamp = {
  topic: string;
  partition: number;
  offset: string;
  /** When the gateway produced it (the envelope's producedAt); null when it cannot be read. */
  producedAt: string | null;
  /** The worker process (WORKER_ID, else host:pid). */
  handledBy: string;
  traceId: string | null;
};

const traceparent = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/**
 * The stamp of a message being applied or dead-lettered. Its trace is the one its `traceparent`
 * carries (the gateway request's, which the apply span continues); without one, the active span's.
 */
export function applyStamp(
  message: InboundMessage,
  producedAt: string | null,
  deps: { config: Pick<Config, 'workers'> },
): ApplyStamp {
  const fromHeader = traceparent.exec(message.headers.traceparent ?? '')?.[1];
  return {
    topic: message.topic,
    partition: message.partition,
    offset: message.offset,
    producedAt,
    handledBy: deps.config.workers.id,
    traceId: fromHeader ?? logContext().traceId ?? null,
  };
}

/** The stamp as statement parameters, in the order of stampColumns. */
export const stampValues = (s: ApplyStamp): unknown[] => [
  s.topic,
  s.partition,
  s.offset,
  s.producedAt,
  s.handledBy,
  s.traceId,
];

const columns = ['kafka_topic', 'kafka_partition', 'kafka_offset', 'produced_at', 'handled_by', 'trace_id'];

/** The stamp's columns, for an INSERT column list. */
export const stampColumns = columns.join(', ');

/** `$first, …` placeholders of the stamp's values. */
export const stampPlaceholders = (first: number): string => columns.map((_, i) => `$${first + i}`).join(', ');

/** `column = $n, …` of a record's stamp for an UPDATE: stampValues from $first on, then how, and handled_at = now(). */
export const stampAssignments = (first: number): string =>
  [...columns.map((c, i) => `${c} = $${first + i}`), `how = $${first + columns.length}`, 'handled_at = now()'].join(
    ', ',
  );

/** A message of a record handled already came again: counted on the record ($1 its id). */
export const countDuplicate = (table: string, idColumn: string): string =>
  `UPDATE ${table} SET duplicate_deliveries = duplicate_deliveries + 1 WHERE ${idColumn} = $1`;
