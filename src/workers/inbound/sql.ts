// Set-based statements of the inbound worker, kept apart from the logic.

/** Locks the job row: chunks of one job apply one at a time, and counters add up exactly. */
export const lockJob = `SELECT id, chunk_count, chunks_done FROM import_jobs WHERE id = $1 AND tenant_id = $2 FOR UPDATE`;

/** The ledger row; no row back means this chunk was applied (or failed) before: skip it. */
export const claimChunk = `
  INSERT INTO import_job_chunks (import_job_id, chunk_index, applied_count, failed_count)
  VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING chunk_index`;

/**
 * One statement for the whole chunk, reading the targets from the chunk message's own bytes ($4,
 * jsonb in binary form: a version byte, then the JSON text), so the worker neither parses them
 * nor rebuilds them as parameters; jsonb_to_record takes each target's fields apart in one pass
 * (JSON null reads as SQL NULL, as the gateway sent it). The last item of an external id wins;
 * rows go in external-id order (byte order), so chunks of different partitions applied side by
 * side lock shared rows in the same order and wait for each other instead of deadlocking. A row
 * only takes data from a later (job, item). Returns how many items it read (item_count), which
 * the worker checks against the count the message named before it commits.
 */
export const upsertTargets = `
  WITH all_items AS MATERIALIZED (
    SELECT t.*, e."index" AS item_index
      FROM jsonb_to_recordset($4::jsonb->'payload'->'items') AS e("index" int, target jsonb),
           jsonb_to_record(e.target) AS t("externalId" text, name text, address jsonb, coordinates jsonb,
                                          "timeWindows" jsonb, "serviceDurationMinutes" int, priority int,
                                          tags text[], metadata jsonb)
  ),
  items AS (
    SELECT DISTINCT ON ("externalId" COLLATE "C") * FROM all_items ORDER BY "externalId" COLLATE "C", item_index DESC
  ),
  upserted AS (
    INSERT INTO targets AS t (tenant_id, source_system, external_id, name, address, latitude, longitude, time_windows,
                              service_duration_minutes, priority, tags, metadata, last_import_job_id, last_item_index)
    SELECT $1, $2, i."externalId", i.name, i.address,
           (i.coordinates->>'latitude')::float8, (i.coordinates->>'longitude')::float8,
           coalesce(i."timeWindows", '[]'), i."serviceDurationMinutes", i.priority, coalesce(i.tags, '{}'),
           coalesce(i.metadata, '{}'), $3, i.item_index
      FROM items AS i
     ORDER BY i."externalId" COLLATE "C"
    ON CONFLICT (tenant_id, source_system, external_id) DO UPDATE SET
      name = EXCLUDED.name, address = EXCLUDED.address, latitude = EXCLUDED.latitude, longitude = EXCLUDED.longitude,
      time_windows = EXCLUDED.time_windows, service_duration_minutes = EXCLUDED.service_duration_minutes,
      priority = EXCLUDED.priority, tags = EXCLUDED.tags, metadata = EXCLUDED.metadata,
      last_import_job_id = EXCLUDED.last_import_job_id, last_item_index = EXCLUDED.last_item_index, updated_at = now()
    WHERE (t.last_import_job_id, t.last_item_index) < (EXCLUDED.last_import_job_id, EXCLUDED.last_item_index)
    RETURNING 1
  )
  SELECT count(*)::int AS item_count FROM all_items`;

/** A message's bytes as a jsonb parameter in binary form (pg sends a Buffer as binary). */
export const jsonbBinary = (json: Buffer): Buffer => Buffer.concat([jsonbVersion, json]);
const jsonbVersion = Buffer.of(1);

/**
 * Counts a finished chunk ($2 applied, $3 failed) and moves the status; $4 is an item error to
 * append (or null) and $5 a failure reason (or null). Errors stay bounded at $6 entries.
 * Returns the job as updated: when its status is final, the caller records the webhook event.
 */
export const finishChunk = `
  UPDATE import_jobs SET
    applied_count = applied_count + $2,
    failed_count = failed_count + $3,
    chunks_done = chunks_done + 1,
    errors = CASE WHEN $4::jsonb IS NULL OR jsonb_array_length(errors) >= $6 THEN errors ELSE errors || $4::jsonb END,
    errors_omitted = errors_omitted + CASE WHEN $4::jsonb IS NOT NULL AND jsonb_array_length(errors) >= $6 THEN 1 ELSE 0 END,
    failure_reason = coalesce(failure_reason, $5),
    status = CASE
      WHEN chunks_done + 1 < chunk_count THEN 'Processing'
      WHEN applied_count + $2 = 0 THEN 'Failed'
      WHEN rejected_count > 0 OR failed_count + $3 > 0 THEN 'CompletedWithErrors'
      ELSE 'Completed' END,
    started_at = coalesce(started_at, now()),
    completed_at = CASE WHEN chunks_done + 1 >= chunk_count THEN now() END,
    updated_at = now()
  WHERE id = $1
  RETURNING id, tenant_id, client_id, kind, source_system, external_batch_id, status, received_count, accepted_count,
            rejected_count, applied_count, failed_count, failure_reason, created_at, completed_at`;
