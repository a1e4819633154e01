// "Where is this batch": what the ledgers recorded about a record and the messages that carried it
// (migration 0015), and the webhook events it raised with their deliveries.
import type { Pool } from '../../shared/db/pool.js';
import type { WebhookEventType } from '../../shared/webhooks/event-types.js';
import { subjectKeys } from '../../shared/webhooks/outbox.js';
import {
  deliveriesOfEvents,
  eventsOfRecord,
  importJob,
  importJobChunks,
  singleMessageRecord,
  type RecordTable,
} from './sql.js';
import { iso } from '../../shared/iso-time.js';

export const traceKinds = ['import-job', 'job', 'material-usage', 'appointment'] as const;
export type TraceKind = (typeof traceKinds)[number];

/** One message of the record: where it was in Kafka and how a worker handled it, or pending. */
export type TracedMessage = {
  /** The chunk's index (import jobs); null for a record carried by one message. */
  chunk: number | null;
  /** pending: not handled yet (still in Kafka, or waiting to be retried). */
  state: 'handled' | 'pending';
  topic: string | null;
  partition: number | null;
  offset: string | null;
  producedAt: string | null;
  handledAt: string | null;
  handledBy: string | null;
  /** copied, upserted (chunks), applied, skipped (records), dead_lettered; null when handled before positions were recorded. */
  how: string | null;
  /** Targets of the chunk applied and failed (import jobs only). */
  items: { applied: number; failed: number } | null;
  /** Deliveries of this message after it was handled (skipped as duplicates). */
  duplicateDeliveries: number;
  traceId: string | null;
};

export type TracedDelivery = {
  endpointId: string;
  url: string;
  status: string;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: string | null;
  completedAt: string | null;
};

export type TracedEvent = { eventId: string; type: string; createdAt: string; deliveries: TracedDelivery[] };

export type Trace = {
  kind: TraceKind;
  id: string;
  tenantId: string;
  client: { id: string; name: string };
  status: string;
  /** Why it failed or was rejected, when it was. */
  reason: string | null;
  acceptedAt: string;
  /** Import jobs: the job's counts and when it started and completed. */
  importJob?: {
    sourceSystem: string;
    externalBatchId: string | null;
    counts: { received: number; accepted: number; rejected: number; applied: number; failed: number };
    chunks: { total: number; done: number };
    startedAt: string | null;
    completedAt: string | null;
  };
  /** Trace ids of its messages (the accepting request's trace, normally one). */
  traceIds: string[];
  messages: TracedMessage[];
  webhooks: TracedEvent[];
};

type Row = Record<string, any>;

/**
 * Where each kind's record lives, and the webhook events that name it: by subject_id, or (events
 * recorded without one) by the data's field that the outbox takes the subject from.
 */
const kinds: Record<TraceKind, { events: WebhookEventType[]; dataKey: string; record?: RecordTable }> = {
  'import-job': {
    events: ['import_job.completed', 'import_job.completed_with_errors', 'import_job.failed'],
    dataKey: subjectKeys['import_job.completed'],
  },
  job: {
    events: ['field_job.created'],
    dataKey: subjectKeys['field_job.created'],
    record: {
      table: 'job_requests',
      idColumn: 'field_job_id',
      status: `CASE WHEN materialized_at IS NOT NULL THEN 'Materialized' WHEN failed_at IS NOT NULL THEN 'Failed' ELSE 'Pending' END`,
      reason: 'failure_reason',
    },
  },
  'material-usage': {
    events: ['work_order.materials_recorded'],
    dataKey: subjectKeys['work_order.materials_recorded'],
    record: {
      table: 'material_usages',
      idColumn: 'id',
      status: 'status',
      reason: 'failure_reason',
    },
  },
  appointment: {
    events: ['appointment_request.status_changed'],
    dataKey: subjectKeys['appointment_request.status_changed'],
    record: {
      table: 'appointment_requests',
      idColumn: 'id',
      status: 'status',
      reason: 'status_reason',
    },
  },
};

const message = (r: Row, chunk: number | null, items: TracedMessage['items']): TracedMessage => ({
  chunk,
  state: 'handled',
  topic: r.kafka_topic,
  partition: r.kafka_partition,
  offset: r.kafka_offset,
  producedAt: iso(r.produced_at),
  handledAt: iso(r.handled_at),
  handledBy: r.handled_by,
  how: r.how,
  items,
  duplicateDeliveries: r.duplicate_deliveries,
  traceId: r.trace_id,
});

const pending = (chunk: number | null): TracedMessage => ({
  chunk,
  state: 'pending',
  topic: null,
  partition: null,
  offset: null,
  producedAt: null,
  handledAt: null,
  handledBy: null,
  how: null,
  items: null,
  duplicateDeliveries: 0,
  traceId: null,
});

/** The record's trace, or null when there is no such record. */
export async function traceRecord(pool: Pool, kind: TraceKind, id: string): Promise<Trace | null> {
  const { events, dataKey, record } = kinds[kind];
  let trace: Omit<Trace, 'webhooks' | 'traceIds'>;
  if (record) {
    const r = (await pool.query<Row>(singleMessageRecord(record), [id])).rows[0];
    if (!r) return null;
    trace = {
      ...head(kind, r),
      messages: [r.handled_at ? message(r, null, null) : pending(null)],
    };
  } else {
    const j = (await pool.query<Row>(importJob, [id])).rows[0];
    if (!j) return null;
    const chunks = (await pool.query<Row>(importJobChunks, [id])).rows;
    const byIndex = new Map(chunks.map((c) => [c.chunk_index as number, c]));
    trace = {
      ...head(kind, j),
      reason: j.failure_reason,
      importJob: {
        sourceSystem: j.source_system,
        externalBatchId: j.external_batch_id,
        counts: {
          received: j.received_count,
          accepted: j.accepted_count,
          rejected: j.rejected_count,
          applied: j.applied_count,
          failed: j.failed_count,
        },
        chunks: { total: j.chunk_count, done: j.chunks_done },
        startedAt: iso(j.started_at),
        completedAt: iso(j.completed_at),
      },
      messages: Array.from({ length: j.chunk_count as number }, (_, i) => {
        const c = byIndex.get(i);
        return c ? message(c, i, { applied: c.applied_count, failed: c.failed_count }) : pending(i);
      }),
    };
  }
  const traceIds = [...new Set(trace.messages.flatMap((m) => (m.traceId ? [m.traceId] : [])))];
  const webhooks = await webhooksOf(pool, trace.client.id, events, trace.acceptedAt, dataKey, trace.id);
  return { ...trace, traceIds, webhooks };
}

function head(kind: TraceKind, r: Row) {
  return {
    kind,
    id: r.id as string,
    tenantId: r.tenant_id as string,
    client: { id: r.client_id as string, name: r.client_name as string },
    status: r.status as string,
    reason: (r.reason ?? null) as string | null,
    acceptedAt: iso(r.created_at)!,
  };
}

async function webhooksOf(
  pool: Pool,
  clientId: string,
  types: WebhookEventType[],
  since: string,
  dataKey: string,
  id: string,
): Promise<TracedEvent[]> {
  const events = (await pool.query<Row>(eventsOfRecord, [clientId, types, since, dataKey, id])).rows;
  if (events.length === 0) return [];
  const deliveries = (await pool.query<Row>(deliveriesOfEvents, [events.map((e) => e.id)])).rows;
  return events.map((e) => ({
    eventId: e.id,
    type: e.type,
    createdAt: iso(e.created_at)!,
    deliveries: deliveries
      .filter((d) => d.event_id === e.id)
      .map((d) => ({
        endpointId: d.endpoint_id,
        url: d.url,
        status: d.status,
        attempts: d.attempt_count,
        lastError: d.last_error,
        nextAttemptAt: d.status === 'Pending' || d.status === 'Delivering' ? iso(d.next_attempt_at) : null,
        completedAt: iso(d.completed_at),
      })),
  }));
}
