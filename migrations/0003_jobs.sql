-- Up Migration
-- Field jobs created by external systems, with their edge ledger, job types and numbering.

CREATE TABLE job_types (
  tenant_id                 uuid NOT NULL REFERENCES tenants(id),
  code                      text NOT NULL,
  name                      text NOT NULL,
  default_duration_minutes  integer,
  PRIMARY KEY (tenant_id, code)
);

-- Per-tenant counters (job numbers); the row lock serialises numbering within a tenant only.
CREATE TABLE tenant_sequences (
  tenant_id  uuid NOT NULL REFERENCES tenants(id),
  name       text NOT NULL,
  value      bigint NOT NULL,
  PRIMARY KEY (tenant_id, name)
);

-- The edge ledger: what the gateway answered. Written with the produce, in one transaction.
CREATE TABLE job_requests (
  field_job_id     uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES tenants(id),
  client_id        uuid NOT NULL REFERENCES integration_clients(id),
  external_id      text NOT NULL,
  idempotency_key  text NOT NULL,
  request_hash     bytea NOT NULL,
  job_number       text NOT NULL,
  request          jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  materialized_at  timestamptz,
  UNIQUE (tenant_id, idempotency_key),
  UNIQUE (tenant_id, external_id),
  UNIQUE (tenant_id, job_number)
);

-- The field job itself, made by the jobs worker.
CREATE TABLE field_jobs (
  id                         uuid PRIMARY KEY REFERENCES job_requests(field_job_id),
  tenant_id                  uuid NOT NULL REFERENCES tenants(id),
  external_id                text NOT NULL,
  job_number                 text NOT NULL,
  status                     text NOT NULL DEFAULT 'Created'
                             CHECK (status IN ('Created', 'Scheduled', 'Dispatched', 'InProgress', 'Completed', 'Cancelled')),
  title                      text NOT NULL,
  description                text,
  job_type                   text NOT NULL,
  priority                   text NOT NULL,
  customer                   jsonb NOT NULL,
  site                       jsonb NOT NULL,
  window_start               timestamptz,
  window_end                 timestamptz,
  expected_duration_minutes  integer,
  import_target              jsonb,
  metadata                   jsonb NOT NULL DEFAULT '{}',
  created_at                 timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, external_id)
);

ALTER TABLE work_orders ADD COLUMN field_job_id uuid REFERENCES field_jobs(id);
CREATE UNIQUE INDEX work_orders_field_job_idx ON work_orders (field_job_id) WHERE field_job_id IS NOT NULL;

-- Down Migration
DROP INDEX work_orders_field_job_idx;
ALTER TABLE work_orders DROP COLUMN field_job_id;
DROP TABLE field_jobs, job_requests, tenant_sequences, job_types;
