-- Up Migration
-- Integrators' self-service: the scopes to manage webhook endpoints and to read the event feed,
-- and the feed's order.
--
-- The feed orders events by feed_seq, assigned after commit by one writer at a time (whoever
-- holds the row lock of event_feed_head: a gateway before it reads, the dispatcher before it
-- prunes). A sequence value taken at insert would commit out of order (a long transaction's
-- event gets a smaller number but becomes visible later), and a reader past it would skip it;
-- numbers assigned to committed rows only, under one lock, become visible in order.

INSERT INTO scopes (name, description) VALUES
  ('webhooks.manage', 'Manage the client''s own webhook endpoints: create, change, rotate secrets, replay, test'),
  ('events.read', 'Read the client''s own events from the event feed (GET /api/v1/events)');

ALTER TABLE webhook_events ADD COLUMN feed_seq bigint;

-- One row: the last position assigned, and the last one pruned (cursors at or before it are gone).
CREATE TABLE event_feed_head (
  id              boolean PRIMARY KEY DEFAULT true CHECK (id),
  last_seq        bigint NOT NULL DEFAULT 0,
  pruned_through  bigint NOT NULL DEFAULT 0 CHECK (pruned_through <= last_seq)
);

-- Events recorded before this migration join the feed in the order they were recorded.
WITH ordered AS (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM webhook_events)
UPDATE webhook_events e SET feed_seq = ordered.n FROM ordered WHERE e.id = ordered.id;
INSERT INTO event_feed_head (last_seq) SELECT coalesce(max(feed_seq), 0) FROM webhook_events;

CREATE UNIQUE INDEX webhook_events_feed_idx ON webhook_events (client_id, feed_seq) WHERE feed_seq IS NOT NULL;
CREATE UNIQUE INDEX webhook_events_feed_seq_idx ON webhook_events (feed_seq) WHERE feed_seq IS NOT NULL;
CREATE INDEX webhook_events_unsequenced_idx ON webhook_events (created_at, id) WHERE feed_seq IS NULL;

-- Wakes long-polling feed readers: delivered when the writing transaction commits (never before,
-- never for one rolled back), one notification per client and transaction.
CREATE FUNCTION notify_webhook_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_event', NEW.client_id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER webhook_events_notify AFTER INSERT ON webhook_events
  FOR EACH ROW EXECUTE FUNCTION notify_webhook_event();

-- Down Migration
DROP TRIGGER webhook_events_notify ON webhook_events;
DROP FUNCTION notify_webhook_event();
DROP TABLE event_feed_head;
DROP INDEX webhook_events_unsequenced_idx;
ALTER TABLE webhook_events DROP COLUMN feed_seq;
DELETE FROM api_key_scopes WHERE scope IN ('webhooks.manage', 'events.read');
DELETE FROM scopes WHERE name IN ('webhooks.manage', 'events.read');
