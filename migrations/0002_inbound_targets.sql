-- Up Migration
-- Inbound targets and the import jobs that bring them in.

CREATE TABLE import_jobs (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id          uuid NOT NULL REFERENCES tenants(id),
  client_id          uuid NOT NULL REFERENCES integration_clients(id),
  kind               text NOT NULL CHECK (kind IN ('Single', 'Batch')),
  source_system      text NOT NULL,
  external_batch_id  text,
  -- Idempotency-Key header, else externalBatchId; NULL: no replay protection asked for.
  idempotency_key    text,
  request_hash       bytea NOT NULL,
  status             text NOT NULL DEFAULT 'Queued'
                     CHECK (status IN ('Queued', 'Processing', 'Completed', 'CompletedWithErrors', 'Failed')),
  received_count     integer NOT NULL CHECK (received_count >= 0),
  accepted_count     integer NOT NULL CHECK (accepted_count >= 0),
  rejected_count     integer NOT NULL CHECK (rejected_count >= 0),
  applied_count      integer NOT NULL DEFAULT 0,
  failed_count       integer NOT NULL DEFAULT 0,
  chunk_count        integer NOT NULL CHECK (chunk_count > 0),
  chunks_done        integer NOT NULL DEFAULT 0,
  -- Per-item errors, at most the documented bound; errors_omitted counts the rest.
  errors             jsonb NOT NULL DEFAULT '[]',
  errors_omitted     integer NOT NULL DEFAULT 0,
  failure_reason     text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  started_at         timestamptz,
  completed_at       timestamptz
);
CREATE UNIQUE INDEX import_jobs_idempotency_idx ON import_jobs (client_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX import_jobs_client_idx ON import_jobs (client_id, id DESC);

-- Which chunks (Kafka messages) of a job are applied: the ledger that makes redelivery harmless.
CREATE TABLE import_job_chunks (
  import_job_id  bigint NOT NULL REFERENCES import_jobs(id),
  chunk_index    integer NOT NULL,
  applied_count  integer NOT NULL,
  failed_count   integer NOT NULL,
  done_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (import_job_id, chunk_index)
);

CREATE TABLE targets (
  tenant_id                 uuid NOT NULL REFERENCES tenants(id),
  source_system             text NOT NULL,
  external_id               text NOT NULL,
  name                      text NOT NULL,
  address                   jsonb,
  latitude                  double precision,
  longitude                 double precision,
  time_windows              jsonb NOT NULL DEFAULT '[]',
  service_duration_minutes  integer,
  priority                  integer,
  tags                      text[] NOT NULL DEFAULT '{}',
  metadata                  jsonb NOT NULL DEFAULT '{}',
  -- (job, item) of the data held: a row only takes data from a later job or item, so the
  -- newer data wins whatever order chunks are applied in.
  last_import_job_id        bigint NOT NULL,
  last_item_index           integer NOT NULL,
  created_at                timestamptz NOT NULL DEFAULT now(),
  updated_at                timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, source_system, external_id)
);
CREATE INDEX targets_last_job_idx ON targets (last_import_job_id);

-- Down Migration
DROP TABLE targets, import_job_chunks, import_jobs;
