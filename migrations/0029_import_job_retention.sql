-- Up Migration
-- Import-job retention (issue 51): the pruner finds finished jobs by when they finished, and
-- deletes their route drafts by job (without this index, by a scan of every draft, which the
-- foreign key's check on each deleted job would repeat).
CREATE INDEX import_jobs_completed_idx ON import_jobs (completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX route_suggestions_import_job_idx ON route_suggestions (import_job_id);
