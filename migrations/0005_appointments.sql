-- Up Migration
-- Appointment requests (submitted over /connect/v1 with OAuth2 access tokens), their status
-- history, the appointment scopes, and the shared signing keys of the token endpoint.

INSERT INTO scopes (name, description) VALUES
  ('appointments.read', 'Read the client''s own appointment requests and their status history'),
  ('appointments.write', 'Submit and cancel appointment requests');

-- Keys that sign access tokens (JWT). Gateway replicas share them: the first to start without
-- OAUTH_SIGNING_KEY creates one under an advisory lock, the others load it. private_pkcs8 is NULL
-- for a key whose private half lives only in OAUTH_SIGNING_KEY (its public half is published here).
CREATE TABLE oauth_signing_keys (
  kid            text PRIMARY KEY,
  alg            text NOT NULL CHECK (alg IN ('ES256', 'EdDSA')),
  public_jwk     jsonb NOT NULL,
  private_pkcs8  text,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_signing_keys_newest_idx ON oauth_signing_keys (created_at DESC) WHERE private_pkcs8 IS NOT NULL;

CREATE TABLE appointment_requests (
  -- apr_ + ULID, assigned by the gateway.
  id                      text PRIMARY KEY CHECK (id ~ '^apr_[0-7][0-9A-HJKMNP-TV-Z]{25}$'),
  tenant_id               uuid NOT NULL REFERENCES tenants(id),
  -- The submitting Integration Client owns the request: other clients get 404.
  client_id               uuid NOT NULL REFERENCES integration_clients(id),
  external_reference      text NOT NULL CHECK (length(external_reference) BETWEEN 1 AND 100),
  service_type            text NOT NULL,
  priority                text NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
  -- The normalised submission (every field present), as returned on read.
  request                 jsonb NOT NULL,
  -- SHA-256 of the canonical submission: a resubmission of the same externalReference must match.
  request_hash            bytea NOT NULL,
  status                  text NOT NULL DEFAULT 'Submitted' CHECK (status IN (
                            'Submitted', 'Validated', 'PendingReview', 'Accepted', 'Rejected', 'Scheduled',
                            'Assigned', 'InProgress', 'Completed', 'Cancelled', 'Failed')),
  -- Why the request is in its status (Rejected, Failed, Cancelled), else NULL.
  status_reason           text,
  cancel_reason           text,
  cancelled_by            text,
  cancelled_at            timestamptz,
  -- Idempotency-Key of the cancel that succeeded, and the hash of its body.
  cancel_idempotency_key  uuid,
  cancel_request_hash     bytea,
  created_at              timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at              timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  UNIQUE (client_id, external_reference),
  CHECK ((status = 'Cancelled') = (cancelled_at IS NOT NULL))
);
CREATE INDEX appointment_requests_tenant_idx ON appointment_requests (tenant_id, status);
CREATE UNIQUE INDEX appointment_requests_cancel_key_idx
  ON appointment_requests (client_id, cancel_idempotency_key) WHERE cancel_idempotency_key IS NOT NULL;

CREATE TABLE appointment_status_history (
  appointment_request_id  text NOT NULL REFERENCES appointment_requests(id),
  seq                     integer NOT NULL CHECK (seq >= 1),
  from_status             text,
  to_status               text NOT NULL,
  reason                  text,
  actor                   text NOT NULL CHECK (actor IN ('client', 'system', 'back-office')),
  at                      timestamptz NOT NULL,
  PRIMARY KEY (appointment_request_id, seq)
);

-- Down Migration
DROP TABLE appointment_status_history, appointment_requests, oauth_signing_keys;
DELETE FROM api_key_scopes WHERE scope IN ('appointments.read', 'appointments.write');
DELETE FROM scopes WHERE name IN ('appointments.read', 'appointments.write');
