-- Up Migration
-- The import-job list, its bounded total and the webhook attempt list read only these indexes
-- (issue 49). Each now carries tenant_id, which the tenant-scope row policy checks on every row:
-- with it an index-only scan answers both (a 10,001-row total in 1-5 ms at 1M jobs); without it
-- PostgreSQL fetched each row from the table or chose a parallel scan of the whole table
-- (60-145 ms). The lists pick their page's ids from the same index before reading the rows
-- (src/gateway/import-jobs/store.ts, src/shared/webhooks/endpoint-deliveries.ts), so the planner
-- can no longer walk the primary key backwards past other clients' newer rows (500 ms for a first
-- page behind 300,000 newer jobs of another client, docs/benchmarks.md).
-- The new indexes are built before the old ones go: building holds off writes to import_jobs (about
-- a second per million jobs per index on 2 cores), never reads; the drops at the end are brief.
CREATE INDEX import_jobs_list_idx ON import_jobs (client_id, id DESC) INCLUDE (tenant_id);
CREATE INDEX import_jobs_list_status_idx ON import_jobs (client_id, status, id DESC) INCLUDE (tenant_id);
CREATE INDEX import_jobs_list_source_idx ON import_jobs (client_id, source_system, id DESC) INCLUDE (tenant_id);
CREATE INDEX import_jobs_list_source_status_idx ON import_jobs (client_id, source_system, status, id DESC) INCLUDE (tenant_id);
DROP INDEX import_jobs_client_idx, import_jobs_client_status_idx, import_jobs_client_source_idx,
  import_jobs_client_source_status_idx;
CREATE INDEX webhook_attempts_endpoint_list_idx ON webhook_attempts (endpoint_id, id DESC) INCLUDE (tenant_id);
CREATE INDEX webhook_attempts_event_list_idx ON webhook_attempts (event_id, id DESC) INCLUDE (tenant_id);
DROP INDEX webhook_attempts_endpoint_idx, webhook_attempts_event_idx;

-- Down Migration
CREATE INDEX import_jobs_client_idx ON import_jobs (client_id, id DESC);
CREATE INDEX import_jobs_client_status_idx ON import_jobs (client_id, status, id DESC);
CREATE INDEX import_jobs_client_source_idx ON import_jobs (client_id, source_system, id DESC);
CREATE INDEX import_jobs_client_source_status_idx ON import_jobs (client_id, source_system, status, id DESC);
DROP INDEX import_jobs_list_idx, import_jobs_list_status_idx, import_jobs_list_source_idx,
  import_jobs_list_source_status_idx;
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id, id DESC);
DROP INDEX webhook_attempts_endpoint_list_idx, webhook_attempts_event_list_idx;
