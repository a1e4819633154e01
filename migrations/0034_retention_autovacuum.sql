-- Up Migration
-- The tables that retention prunes (src/workers/retention/, src/shared/webhooks/feed.ts) are
-- vacuumed when 2 % of their rows are dead instead of PostgreSQL's default 20 % (issue 51: a size
-- that stops growing). The space of a deleted row is reused only once a vacuum has passed over
-- it; at the default a table pruned a day at a time (1/30 of its rows at 30 days' retention) was
-- vacuumed about every sixth day and carried up to a fifth of its size in dead rows, and its
-- indexes the same, the bench:soak run of 2026-12-05 saw the pruned tables grow 31 % past the
-- first retention period (docs/benchmarks.md). A vacuum of what one prune round left is small.
-- ALTER TABLE … SET (storage parameters) takes a SHARE UPDATE EXCLUSIVE lock: reads and writes go on.
ALTER TABLE import_jobs SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE import_job_chunks SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE route_suggestions SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE webhook_events SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE webhook_attempts SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE dead_letter_actions SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE dead_letters_handled SET (autovacuum_vacuum_scale_factor = 0.02);

-- Down Migration
ALTER TABLE import_jobs RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE import_job_chunks RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE route_suggestions RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE webhook_events RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE webhook_deliveries RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE webhook_attempts RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE dead_letter_actions RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE dead_letters_handled RESET (autovacuum_vacuum_scale_factor);
