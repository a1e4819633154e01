-- Up Migration
-- A replay asked for while the delivery's attempt is in flight (status Delivering, lease held) no
-- longer clears the lease (the claim stopped counting the open attempt, and sent the delivery
-- again beside it, past the endpoint's max_in_flight): it sets replay_requested, and the
-- dispatcher that records the attempt's outcome queues the delivery again (Pending, now, a new
-- round of the retry schedule). A default, so the release before it keeps working beside it.

ALTER TABLE webhook_deliveries ADD COLUMN replay_requested boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE webhook_deliveries DROP COLUMN replay_requested;
