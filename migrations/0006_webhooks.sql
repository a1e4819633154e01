-- Up Migration
-- Webhooks: endpoints an Integration Client subscribed, the outbox of events (written in the same
-- transaction as the state change that raises them), one delivery per (event, endpoint) claimed
-- by the dispatcher with a lease, and every HTTP attempt.

CREATE TABLE webhook_endpoints (
  id                          uuid PRIMARY KEY,
  tenant_id                   uuid NOT NULL REFERENCES tenants(id),
  client_id                   uuid NOT NULL REFERENCES integration_clients(id),
  url                         text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
  -- Subscribed event types; '*' alone = every type, present and future.
  event_types                 text[] NOT NULL CHECK (cardinality(event_types) >= 1),
  -- Standard Webhooks secrets (whsec_ + base64 of 32 bytes). Kept as-is: the dispatcher needs
  -- them to sign (HMAC is symmetric). previous_secret signs too until previous_secret_expires_at.
  secret                      text NOT NULL,
  previous_secret             text,
  previous_secret_expires_at  timestamptz,
  secret_rotated_at           timestamptz,
  status                      text NOT NULL DEFAULT 'Active' CHECK (status IN ('Active', 'Disabled')),
  disabled_reason             text,
  disabled_at                 timestamptz,
  -- Failed attempts since the last success (reset by a 2xx and by `webhook enable`).
  consecutive_failures        integer NOT NULL DEFAULT 0,
  last_success_at             timestamptz,
  last_failure_at             timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'Disabled') = (disabled_at IS NOT NULL))
);
CREATE INDEX webhook_endpoints_client_idx ON webhook_endpoints (client_id) WHERE status = 'Active';

-- The outbox. body is the exact JSON text sent (the envelope), so every attempt and replay sends
-- the same bytes under the same webhook-id (= id).
CREATE TABLE webhook_events (
  id          text PRIMARY KEY CHECK (id ~ '^evt_[0-7][0-9A-HJKMNP-TV-Z]{25}$'),
  tenant_id   uuid NOT NULL REFERENCES tenants(id),
  client_id   uuid NOT NULL REFERENCES integration_clients(id),
  type        text NOT NULL,
  version     integer NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_client_idx ON webhook_events (client_id, created_at DESC);

CREATE TABLE webhook_deliveries (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id         text NOT NULL REFERENCES webhook_events(id),
  endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints(id),
  -- Pending: due at next_attempt_at. Delivering: claimed by a dispatcher until lease_until (a
  -- dispatcher that dies leaves the lease to expire; the delivery is then claimed again).
  -- Succeeded: a 2xx. Failed: every attempt of the retry schedule failed (the endpoint is disabled).
  status           text NOT NULL DEFAULT 'Pending' CHECK (status IN ('Pending', 'Delivering', 'Succeeded', 'Failed')),
  -- Every attempt ever made (numbers the attempts); round_attempts: since it was (re)queued, which
  -- picks the next delay of the retry schedule.
  attempt_count    integer NOT NULL DEFAULT 0,
  round_attempts   integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  lease_until      timestamptz,
  lease_token      uuid,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
  WHERE status IN ('Pending', 'Delivering');
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, status);

CREATE TABLE webhook_attempts (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id       bigint NOT NULL REFERENCES webhook_deliveries(id),
  event_id          text NOT NULL,
  endpoint_id       uuid NOT NULL,
  attempt           integer NOT NULL CHECK (attempt >= 1),
  -- Succeeded (2xx), HttpError (another status), Timeout, NetworkError, Refused (target not allowed).
  outcome           text NOT NULL CHECK (outcome IN ('Succeeded', 'HttpError', 'Timeout', 'NetworkError', 'Refused')),
  status_code       integer,
  latency_ms        integer NOT NULL,
  error             text,
  -- The first 500 bytes of the response body.
  response_snippet  text,
  started_at        timestamptz NOT NULL,
  finished_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX webhook_attempts_event_idx ON webhook_attempts (event_id, id DESC);

-- Down Migration
DROP TABLE webhook_attempts, webhook_deliveries, webhook_events, webhook_endpoints;
