// Statements of the admin CLI's `trace`: read-only, each by primary key or an index.

/** The stamp columns (migration 0015) as the trace reads them. */
const stamp = `kafka_topic, kafka_partition, kafka_offset::text AS kafka_offset, produced_at, handled_by, how, trace_id,
  duplicate_deliveries`;

export const importJob = `
  SELECT j.id::text AS id, j.tenant_id, j.client_id, c.name AS client_name, j.status, j.kind, j.source_system,
         j.external_batch_id, j.received_count, j.accepted_count, j.rejected_count, j.applied_count, j.failed_count,
         j.chunk_count, j.chunks_done, j.failure_reason, j.created_at, j.started_at, j.completed_at
    FROM import_jobs j JOIN integration_clients c ON c.id = j.client_id
   WHERE j.id = $1`;

export const importJobChunks = `
  SELECT chunk_index, applied_count, failed_count, done_at AS handled_at, ${stamp}
    FROM import_job_chunks WHERE import_job_id = $1 ORDER BY chunk_index`;

/** Where a kind's record lives: its table, id column, and expressions of its status and failure reason. */
export type RecordTable = { table: string; idColumn: string; status: string; reason: string };

/** A record that one message carries (field job, material usage, appointment request). */
export const singleMessageRecord = (r: RecordTable) => `
  SELECT r.${r.idColumn}::text AS id, r.tenant_id, r.client_id, c.name AS client_name, ${r.status} AS status,
         ${r.reason} AS reason, r.created_at, r.handled_at, ${stamp}
    FROM ${r.table} r JOIN integration_clients c ON c.id = r.client_id
   WHERE r.${r.idColumn} = $1`;

/**
 * Webhook events a record raised: its client's events of the kind's types ($2) that name it ($5),
 * by subject_id (migration 0032, webhook_events_subject_idx). Events without a subject_id (recorded
 * before 0032, or by the previous release during a rolling upgrade) are found as before, by their
 * data's field ($4) since the record was made ($3), reading only such events
 * (webhook_events_unsubjected_idx, partial on subject_id IS NULL): never the client's newer ones,
 * and fewer as retention prunes the old ones. Before, every event of the client since the record was
 * made was read and parsed (docs/benchmarks.md).
 */
export const eventsOfRecord = `
  SELECT id, type, created_at FROM webhook_events
   WHERE client_id = $1 AND subject_id = $5 AND type = ANY($2::text[])
  UNION ALL
  SELECT id, type, created_at FROM webhook_events
   WHERE client_id = $1 AND subject_id IS NULL AND created_at >= $3 AND type = ANY($2::text[])
     AND (body::jsonb -> 'data' ->> $4) = $5
   ORDER BY created_at, id`;

export const deliveriesOfEvents = `
  SELECT d.event_id, d.endpoint_id, ep.url, d.status, d.attempt_count, d.last_error, d.next_attempt_at, d.completed_at
    FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
   WHERE d.event_id = ANY($1::text[])
   ORDER BY d.id`;
