-- Up Migration
-- An endpoint's circuit breaker also opens on a failure rate (workers/webhooks/breaker.ts): the
-- outcomes of its last attempts, as a bit mask (bit 0 the newest, 1 = failed) and how many of the
-- bits are attempts (at most the window, WEBHOOK_BREAKER_WINDOW). Reset when the breaker closes
-- and when the endpoint is enabled again.

ALTER TABLE webhook_endpoints
  ADD COLUMN recent_failures_mask bigint NOT NULL DEFAULT 0,
  ADD COLUMN recent_attempts integer NOT NULL DEFAULT 0 CHECK (recent_attempts BETWEEN 0 AND 62);

-- Down Migration
ALTER TABLE webhook_endpoints DROP COLUMN recent_failures_mask, DROP COLUMN recent_attempts;
