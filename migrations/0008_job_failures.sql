-- Up Migration
-- A job request whose materialisation failed for good (its message was dead-lettered).
ALTER TABLE job_requests ADD COLUMN failed_at timestamptz, ADD COLUMN failure_reason text;

-- Down Migration
ALTER TABLE job_requests DROP COLUMN failed_at, DROP COLUMN failure_reason;
