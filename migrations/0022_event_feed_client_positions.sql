-- Up Migration
-- Event feed positions per client (issue 39). Cursors were global positions (feed_seq): a
-- client's cursor moved when other tenants' events were numbered, and the gap between two of its
-- own events counted everyone else's. Now each client's events are numbered 1, 2, 3 … of its
-- own (client_seq), in feed order, by the same sequencing statement that gives feed_seq (under
-- event_feed_head's lock), so a client's positions too become visible strictly in order.
-- feed_seq stays: the order across clients that numbering and pruning follow.

ALTER TABLE webhook_events ADD COLUMN client_seq bigint;

-- The last position given to each client's events (its events may since have been pruned, so
-- this is not their max). A client without a row has had none.
CREATE TABLE event_feed_clients (
  client_id  uuid PRIMARY KEY REFERENCES integration_clients(id),
  tenant_id  uuid NOT NULL REFERENCES tenants(id),
  last_seq   bigint NOT NULL CHECK (last_seq > 0)
);

-- Events numbered so far get their clients' positions in feed order.
WITH ordered AS (
  SELECT id, row_number() OVER (PARTITION BY client_id ORDER BY feed_seq) AS n
    FROM webhook_events WHERE feed_seq IS NOT NULL
)
UPDATE webhook_events e SET client_seq = ordered.n FROM ordered WHERE e.id = ordered.id;
INSERT INTO event_feed_clients (client_id, tenant_id, last_seq)
SELECT client_id, tenant_id, max(client_seq) FROM webhook_events
 WHERE client_seq IS NOT NULL GROUP BY client_id, tenant_id;

CREATE UNIQUE INDEX webhook_events_client_seq_idx ON webhook_events (client_id, client_seq)
  WHERE client_seq IS NOT NULL;

-- The tenant scope (0017, 0018) reads a client's row beside its page.
ALTER TABLE event_feed_clients ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON event_feed_clients TO connect_tenant_scope
  USING (tenant_id = (SELECT connect_scope_tenant())) WITH CHECK (tenant_id = (SELECT connect_scope_tenant()));
CREATE POLICY all_tenants ON event_feed_clients TO connect_all_tenants USING (true) WITH CHECK (true);
GRANT SELECT ON event_feed_clients TO connect_tenant_scope;

-- Down Migration
DROP TABLE event_feed_clients;
DROP INDEX webhook_events_client_seq_idx;
ALTER TABLE webhook_events DROP COLUMN client_seq;
