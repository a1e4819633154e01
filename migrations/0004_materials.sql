-- Up Migration
-- Work-order material usage: the edge ledger (usage + lines, written by the gateway with the
-- produce), and the stock movements the materials worker books against inventory_balances.

-- One reported usage event. UNIQUE (tenant_id, external_event_id) is the idempotency key;
-- request_hash (SHA-256 of the normalised request) tells a replay from a conflicting reuse.
CREATE TABLE material_usages (
  id                 uuid PRIMARY KEY,
  tenant_id          uuid NOT NULL REFERENCES tenants(id),
  client_id          uuid NOT NULL REFERENCES integration_clients(id),
  work_order_id      integer NOT NULL REFERENCES work_orders(id),
  external_event_id  text NOT NULL CHECK (length(external_event_id) BETWEEN 1 AND 200),
  request_hash       bytea NOT NULL,
  location_id        uuid NOT NULL REFERENCES inventory_locations(id),
  used_at            timestamptz NOT NULL,
  -- Pending: recorded at the edge, stock not moved yet. Applied: the worker booked it.
  -- Failed: its message was dead-lettered (failure_reason says why); stock not moved.
  status             text NOT NULL DEFAULT 'Pending' CHECK (status IN ('Pending', 'Applied', 'Failed')),
  failure_reason     text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  applied_at         timestamptz,
  UNIQUE (tenant_id, external_event_id)
);
CREATE INDEX material_usages_work_order_idx ON material_usages (work_order_id, used_at, created_at);

CREATE TABLE material_usage_lines (
  material_usage_id  uuid NOT NULL REFERENCES material_usages(id) ON DELETE CASCADE,
  line_no            integer NOT NULL CHECK (line_no >= 1),
  item_id            uuid NOT NULL REFERENCES inventory_items(id),
  quantity           numeric(18, 4) NOT NULL CHECK (quantity > 0),
  unit_of_measure    text,
  PRIMARY KEY (material_usage_id, line_no)
);

-- Every change of a balance, signed (usage: negative). One row per usage line of a tracked
-- item: UNIQUE (material_usage_id, line_no) makes a redelivered usage unable to book twice.
CREATE TABLE stock_movements (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id          uuid NOT NULL REFERENCES tenants(id),
  item_id            uuid NOT NULL REFERENCES inventory_items(id),
  location_id        uuid NOT NULL REFERENCES inventory_locations(id),
  quantity_delta     numeric(18, 4) NOT NULL,
  reason             text NOT NULL CHECK (reason IN ('MaterialUsage')),
  material_usage_id  uuid NOT NULL REFERENCES material_usages(id),
  line_no            integer NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (material_usage_id, line_no)
);
CREATE INDEX stock_movements_balance_idx ON stock_movements (item_id, location_id, created_at);

-- Down Migration
DROP TABLE stock_movements, material_usage_lines, material_usages;
