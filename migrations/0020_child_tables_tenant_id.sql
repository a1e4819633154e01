-- Up Migration
-- The tenant scope's child tables carry their tenant (issue 25). Until now their policies (0017)
-- looked the parent row up for every row read (EXISTS on the parent, through the parent's own
-- policy): reading an appointment's status history ran at x0.55 of the unscoped read
-- (bench:tenant-scope). Now each child row holds its parent's tenant_id, and its policy is the
-- same once-per-statement condition as every other table's (0018). Every writer takes the value
-- from the parent row in the same statement (inbound/sql.ts, materials/store.ts,
-- appointments/transitions-sql.ts, webhooks/outbox.ts and endpoint-deliveries.ts,
-- workers/webhooks/sql.ts); NOT NULL makes a writer that forgets it fail at once.
DO $$
DECLARE
  -- child table, parent table, the child's column naming its parent row
  children constant text[][] := ARRAY[
    ['import_job_chunks', 'import_jobs', 'import_job_id'],
    ['material_usage_lines', 'material_usages', 'material_usage_id'],
    ['appointment_status_history', 'appointment_requests', 'appointment_request_id'],
    ['webhook_deliveries', 'webhook_endpoints', 'endpoint_id'],
    ['webhook_attempts', 'webhook_endpoints', 'endpoint_id']
  ];
  c text[];
BEGIN
  FOREACH c SLICE 1 IN ARRAY children LOOP
    EXECUTE format('ALTER TABLE %I ADD COLUMN tenant_id uuid', c[1]);
    EXECUTE format('UPDATE %I c SET tenant_id = p.tenant_id FROM %I p WHERE p.id = c.%I', c[1], c[2], c[3]);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant_id SET NOT NULL', c[1]);
    EXECUTE format('ALTER POLICY tenant_scope ON %I USING (tenant_id = (SELECT connect_scope_tenant())) '
                   'WITH CHECK (tenant_id = (SELECT connect_scope_tenant()))', c[1]);
  END LOOP;
END $$;

-- Down Migration
DO $$
DECLARE
  children constant text[][] := ARRAY[
    ['import_job_chunks', 'import_jobs', 'import_job_id'],
    ['material_usage_lines', 'material_usages', 'material_usage_id'],
    ['appointment_status_history', 'appointment_requests', 'appointment_request_id'],
    ['webhook_deliveries', 'webhook_endpoints', 'endpoint_id'],
    ['webhook_attempts', 'webhook_endpoints', 'endpoint_id']
  ];
  c text[];
BEGIN
  FOREACH c SLICE 1 IN ARRAY children LOOP
    EXECUTE format('ALTER POLICY tenant_scope ON %I USING (EXISTS (SELECT FROM %I p WHERE p.id = %I.%I)) '
                   'WITH CHECK (EXISTS (SELECT FROM %I p WHERE p.id = %I.%I))',
                   c[1], c[2], c[1], c[3], c[2], c[1], c[3]);
    EXECUTE format('ALTER TABLE %I DROP COLUMN tenant_id', c[1]);
  END LOOP;
END $$;
