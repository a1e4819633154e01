-- Up Migration
-- Deleting a delivery checks that no attempt still references it (webhook_attempts.delivery_id's
-- foreign key): without this index every deleted delivery scanned the whole attempts table, so
-- the pruner's batches (shared/webhooks/feed.ts) and an endpoint's delete grew with the history.

CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id);

-- Down Migration
DROP INDEX webhook_attempts_delivery_idx;
