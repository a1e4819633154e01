-- Up Migration
-- Tenants, integration clients, API keys and scopes; inventory and work orders;
-- the shared rate-limit counters.

CREATE TABLE tenants (
  id          uuid PRIMARY KEY,
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE integration_clients (
  id                     uuid PRIMARY KEY,
  tenant_id              uuid NOT NULL REFERENCES tenants(id),
  name                   text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- NULL: the gateway's RATE_LIMIT_PER_MINUTE applies.
  rate_limit_per_minute  integer CHECK (rate_limit_per_minute > 0),
  created_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX integration_clients_tenant_idx ON integration_clients (tenant_id);

CREATE TABLE scopes (
  name         text PRIMARY KEY,
  description  text NOT NULL
);
INSERT INTO scopes (name, description) VALUES
  ('connect.inventory.read', 'Read inventory items, locations and stock balances'),
  ('connect.workorders.materials.read', 'Read material usage recorded on work orders'),
  ('connect.workorders.materials.write', 'Record material usage on work orders'),
  ('connect.jobs.write', 'Create field jobs'),
  ('import_jobs.read', 'List and read the client''s own import jobs'),
  ('route_suggestions.create', 'Create route suggestion drafts from import jobs'),
  ('inbound.targets.write', 'Push a single inbound target'),
  ('inbound.targets.batch.write', 'Push batches of inbound targets'),
  ('integration.health.read', 'Read the integration health check');

-- Only a SHA-256 of the key and its short public prefix are stored; the key itself is
-- shown once when created.
CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  client_id   uuid NOT NULL REFERENCES integration_clients(id),
  prefix      text NOT NULL,
  key_hash    bytea NOT NULL UNIQUE,
  expires_at  timestamptz,
  revoked_at  timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_client_idx ON api_keys (client_id);
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);

CREATE TABLE api_key_scopes (
  api_key_id  uuid NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
  scope       text NOT NULL REFERENCES scopes(name),
  PRIMARY KEY (api_key_id, scope)
);

-- rate-limiter-flexible's RateLimiterPostgres layout. UNLOGGED: counters are worth
-- losing on a crash in exchange for cheaper writes on every request.
CREATE UNLOGGED TABLE rate_limits (
  key     varchar(255) PRIMARY KEY,
  points  integer NOT NULL DEFAULT 0,
  expire  bigint
);

CREATE TABLE inventory_items (
  id                   uuid PRIMARY KEY,
  tenant_id            uuid NOT NULL REFERENCES tenants(id),
  name                 text,
  sku                  text,
  category_name        text,
  unit_of_measure      text,
  track_stock          boolean NOT NULL DEFAULT true,
  default_quantity     numeric(18, 4),
  low_stock_threshold  numeric(18, 4),
  created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inventory_items_tenant_idx ON inventory_items (tenant_id);
CREATE UNIQUE INDEX inventory_items_tenant_sku_idx ON inventory_items (tenant_id, sku) WHERE sku IS NOT NULL;

CREATE TABLE inventory_locations (
  id             uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL REFERENCES tenants(id),
  name           text,
  external_code  text,
  location_type  text NOT NULL CHECK (location_type IN ('Warehouse', 'Vehicle', 'Technician', 'CustomerSite', 'Transit')),
  is_default     boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inventory_locations_tenant_idx ON inventory_locations (tenant_id);
CREATE UNIQUE INDEX inventory_locations_tenant_code_idx ON inventory_locations (tenant_id, external_code) WHERE external_code IS NOT NULL;
CREATE UNIQUE INDEX inventory_locations_one_default_idx ON inventory_locations (tenant_id) WHERE is_default;

CREATE TABLE inventory_balances (
  tenant_id         uuid NOT NULL REFERENCES tenants(id),
  item_id           uuid NOT NULL REFERENCES inventory_items(id),
  location_id       uuid NOT NULL REFERENCES inventory_locations(id),
  quantity_on_hand  numeric(18, 4) NOT NULL DEFAULT 0,
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (item_id, location_id)
);
CREATE INDEX inventory_balances_tenant_idx ON inventory_balances (tenant_id);

-- int32 ids as the spec's work-order paths demand.
CREATE TABLE work_orders (
  id                      integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id               uuid NOT NULL REFERENCES tenants(id),
  external_work_order_id  text NOT NULL CHECK (length(external_work_order_id) BETWEEN 1 AND 100),
  title                   text,
  created_at              timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, external_work_order_id)
);

-- Down Migration
DROP TABLE work_orders, inventory_balances, inventory_locations, inventory_items,
  rate_limits, api_key_scopes, api_keys, scopes, integration_clients, tenants;
