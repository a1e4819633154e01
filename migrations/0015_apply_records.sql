-- Up Migration
-- Where each message went (admin CLI `trace`): the Kafka position it came from, when the gateway
-- produced it, when and by which worker process (WORKER_ID, else host:pid) it was applied or
-- dead-lettered, how, and the trace it belongs to; and how many times it came again afterwards.
-- Workers write them in the transaction that applies (or marks failed) the record. NULL on rows
-- from before this migration.

ALTER TABLE import_job_chunks
  ADD COLUMN kafka_topic text,
  ADD COLUMN kafka_partition integer,
  ADD COLUMN kafka_offset bigint,
  ADD COLUMN produced_at timestamptz,
  ADD COLUMN handled_by text,
  -- copied: COPY straight into targets; upserted: staging table (or v1 JSON) and upsert.
  ADD COLUMN how text CHECK (how IN ('copied', 'upserted', 'dead_lettered')),
  ADD COLUMN trace_id text,
  ADD COLUMN duplicate_deliveries integer NOT NULL DEFAULT 0;

-- One message per record: a field job's creation, a material usage, an appointment submission.
ALTER TABLE job_requests
  ADD COLUMN kafka_topic text,
  ADD COLUMN kafka_partition integer,
  ADD COLUMN kafka_offset bigint,
  ADD COLUMN produced_at timestamptz,
  ADD COLUMN handled_at timestamptz,
  ADD COLUMN handled_by text,
  ADD COLUMN how text CHECK (how IN ('applied', 'skipped', 'dead_lettered')),
  ADD COLUMN trace_id text,
  ADD COLUMN duplicate_deliveries integer NOT NULL DEFAULT 0;

ALTER TABLE material_usages
  ADD COLUMN kafka_topic text,
  ADD COLUMN kafka_partition integer,
  ADD COLUMN kafka_offset bigint,
  ADD COLUMN produced_at timestamptz,
  ADD COLUMN handled_at timestamptz,
  ADD COLUMN handled_by text,
  ADD COLUMN how text CHECK (how IN ('applied', 'skipped', 'dead_lettered')),
  ADD COLUMN trace_id text,
  ADD COLUMN duplicate_deliveries integer NOT NULL DEFAULT 0;

ALTER TABLE appointment_requests
  ADD COLUMN kafka_topic text,
  ADD COLUMN kafka_partition integer,
  ADD COLUMN kafka_offset bigint,
  ADD COLUMN produced_at timestamptz,
  ADD COLUMN handled_at timestamptz,
  ADD COLUMN handled_by text,
  -- skipped: the request had left Submitted (cancelled) before its message was handled.
  ADD COLUMN how text CHECK (how IN ('applied', 'skipped', 'dead_lettered')),
  ADD COLUMN trace_id text,
  ADD COLUMN duplicate_deliveries integer NOT NULL DEFAULT 0;

-- Down Migration
ALTER TABLE appointment_requests
  DROP COLUMN kafka_topic, DROP COLUMN kafka_partition, DROP COLUMN kafka_offset, DROP COLUMN produced_at,
  DROP COLUMN handled_at, DROP COLUMN handled_by, DROP COLUMN how, DROP COLUMN trace_id, DROP COLUMN duplicate_deliveries;
ALTER TABLE material_usages
  DROP COLUMN kafka_topic, DROP COLUMN kafka_partition, DROP COLUMN kafka_offset, DROP COLUMN produced_at,
  DROP COLUMN handled_at, DROP COLUMN handled_by, DROP COLUMN how, DROP COLUMN trace_id, DROP COLUMN duplicate_deliveries;
ALTER TABLE job_requests
  DROP COLUMN kafka_topic, DROP COLUMN kafka_partition, DROP COLUMN kafka_offset, DROP COLUMN produced_at,
  DROP COLUMN handled_at, DROP COLUMN handled_by, DROP COLUMN how, DROP COLUMN trace_id, DROP COLUMN duplicate_deliveries;
ALTER TABLE import_job_chunks
  DROP COLUMN kafka_topic, DROP COLUMN kafka_partition, DROP COLUMN kafka_offset, DROP COLUMN produced_at,
  DROP COLUMN handled_by, DROP COLUMN how, DROP COLUMN trace_id, DROP COLUMN duplicate_deliveries;
