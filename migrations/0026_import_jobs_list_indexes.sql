-- Up Migration
-- The import-job list's filters served by an index each (issue 49): newest first within one
-- client's jobs of one status, one source system, or both, so a filter that matches few of a
-- long history reads those few instead of walking every job of the client. (client_id, id DESC)
-- already serves the list without filters and its cursor. Plain CREATE INDEX (each migration runs in a
-- transaction): it holds off writes to import_jobs while it builds, about a second per
-- million jobs per index on 2 cores (docs/benchmarks.md, bench:reads).
CREATE INDEX import_jobs_client_status_idx ON import_jobs (client_id, status, id DESC);
CREATE INDEX import_jobs_client_source_idx ON import_jobs (client_id, source_system, id DESC);
CREATE INDEX import_jobs_client_source_status_idx ON import_jobs (client_id, source_system, status, id DESC);
