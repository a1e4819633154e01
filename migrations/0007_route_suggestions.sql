-- Up Migration
-- Smart Route Suggestion drafts computed from an import job's targets.

CREATE TABLE route_suggestions (
  id             uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL REFERENCES tenants(id),
  client_id      uuid NOT NULL REFERENCES integration_clients(id),
  import_job_id  bigint NOT NULL REFERENCES import_jobs(id),
  name           text,
  status         text NOT NULL DEFAULT 'Draft' CHECK (status IN ('Draft')),
  request        jsonb NOT NULL,
  result         jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX route_suggestions_client_idx ON route_suggestions (client_id, created_at DESC);

-- Down Migration
DROP TABLE route_suggestions;
