-- Up Migration
-- Webhook endpoints isolated from each other (issue 39). Until now the dispatcher took due
-- deliveries by next_attempt_at alone into slots every tenant shared, so one tenant's slow
-- endpoints held every slot for a whole timeout.
--   max_in_flight: attempts to this endpoint in flight at once across all dispatchers; NULL takes
--     the operator's WEBHOOK_ENDPOINT_CONCURRENCY (the client may set it up to
--     WEBHOOK_ENDPOINT_CONCURRENCY_MAX; the dispatcher applies the maximum as it is now).
--   The circuit breaker: closed while breaker_opened_at is NULL. It opens after
--     WEBHOOK_BREAKER_FAILURES consecutive failed attempts: nothing is sent until
--     breaker_probe_at, then one delivery at a time (the probe) until an attempt succeeds
--     (closed) or fails (open again, for longer: breaker_trips counts the opens in a row).
ALTER TABLE webhook_endpoints
  ADD COLUMN max_in_flight integer CHECK (max_in_flight BETWEEN 1 AND 1000),
  ADD COLUMN breaker_opened_at timestamptz,
  ADD COLUMN breaker_probe_at timestamptz,
  ADD COLUMN breaker_trips integer NOT NULL DEFAULT 0,
  ADD CHECK ((breaker_opened_at IS NULL) = (breaker_probe_at IS NULL));

-- The dispatcher's claim reads each endpoint's due deliveries in order, and its attempts in flight.
CREATE INDEX webhook_deliveries_endpoint_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at, id)
  WHERE status IN ('Pending', 'Delivering');
CREATE INDEX webhook_deliveries_in_flight_idx ON webhook_deliveries (endpoint_id) WHERE status = 'Delivering';

-- Down Migration
DROP INDEX webhook_deliveries_in_flight_idx;
DROP INDEX webhook_deliveries_endpoint_due_idx;
ALTER TABLE webhook_endpoints
  DROP COLUMN max_in_flight,
  DROP COLUMN breaker_opened_at,
  DROP COLUMN breaker_probe_at,
  DROP COLUMN breaker_trips;
