-- Up Migration
-- Tenant scope that cannot be forgotten (issue 25). The gateway's request paths reach tenant data
-- only on connections scoped to one tenant (src/shared/db/tenant-scope.ts: the session takes the
-- role connect_tenant_scope and sets connect.tenant_id): row-level security then shows and accepts
-- only that tenant's rows, whatever a statement's WHERE says, and a scoped statement without a
-- tenant set sees nothing and can write nothing.
--
-- Who bypasses, on purpose:
--   - the tables' owner and superusers (PostgreSQL never applies RLS to them unless FORCEd): the
--     user that runs migrations, and the workers and admin CLI when they connect as it;
--   - members of connect_all_tenants: a login role that is neither (ops/postgres/service-role.sql)
--     and works across tenants (workers, admin CLI, the gateway's authentication and feed).
-- Any other role sees no row of these tables.
--
-- Roles belong to the cluster, not the database: made once if missing (needs CREATEROLE or a
-- superuser; docs/operations.md says what to do without), never dropped by the down migration.

DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['connect_tenant_scope', 'connect_all_tenants'] LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION
        -- Another database of the cluster migrating at the same moment made it first.
        WHEN duplicate_object OR unique_violation THEN NULL;
        WHEN insufficient_privilege THEN
          RAISE EXCEPTION 'role % is missing and % may not create roles', r, current_user
            USING HINT = format('Have an administrator run: CREATE ROLE %I NOLOGIN; GRANT %I TO %I; '
                                'then migrate again (docs/operations.md, tenant scope).', r, r, current_user);
      END;
    END IF;
  END LOOP;
END $$;

-- The tenant a scoped transaction is for; NULL when none is set (then no row matches).
CREATE FUNCTION connect_scope_tenant() RETURNS uuid LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('connect.tenant_id', true), '')::uuid $$;

DO $$
DECLARE
  -- Tenant-owned tables, with the row condition of the scope: their own tenant_id, or their
  -- parent row's (which the parent's own policy filters). integration_clients, api_keys and
  -- api_key_scopes stay out: authentication reads them before it knows the tenant; the scope
  -- role has no privilege on them, so a scoped statement that reads them fails. targets stays out
  -- too: PostgreSQL refuses COPY FROM into a table with row security for every role it binds,
  -- and the inbound worker COPYs new targets straight in (as a service role of
  -- ops/postgres/service-role.sql, that would fail); the scope reads it (SELECT only), its own
  -- tenant conditions being the only line there.
  scoped constant text[][] := ARRAY[
    ['inventory_items', 'tenant_id = connect_scope_tenant()'],
    ['inventory_locations', 'tenant_id = connect_scope_tenant()'],
    ['inventory_balances', 'tenant_id = connect_scope_tenant()'],
    ['work_orders', 'tenant_id = connect_scope_tenant()'],
    ['import_jobs', 'tenant_id = connect_scope_tenant()'],
    ['import_job_chunks', 'EXISTS (SELECT FROM import_jobs p WHERE p.id = import_job_chunks.import_job_id)'],
    ['job_types', 'tenant_id = connect_scope_tenant()'],
    ['tenant_sequences', 'tenant_id = connect_scope_tenant()'],
    ['job_requests', 'tenant_id = connect_scope_tenant()'],
    ['field_jobs', 'tenant_id = connect_scope_tenant()'],
    ['material_usages', 'tenant_id = connect_scope_tenant()'],
    ['material_usage_lines', 'EXISTS (SELECT FROM material_usages p WHERE p.id = material_usage_lines.material_usage_id)'],
    ['stock_movements', 'tenant_id = connect_scope_tenant()'],
    ['appointment_requests', 'tenant_id = connect_scope_tenant()'],
    ['appointment_status_history',
     'EXISTS (SELECT FROM appointment_requests p WHERE p.id = appointment_status_history.appointment_request_id)'],
    ['route_suggestions', 'tenant_id = connect_scope_tenant()'],
    ['webhook_endpoints', 'tenant_id = connect_scope_tenant()'],
    ['webhook_events', 'tenant_id = connect_scope_tenant()'],
    ['webhook_deliveries', 'EXISTS (SELECT FROM webhook_endpoints p WHERE p.id = webhook_deliveries.endpoint_id)'],
    ['webhook_attempts', 'EXISTS (SELECT FROM webhook_endpoints p WHERE p.id = webhook_attempts.endpoint_id)']
  ];
  t text[];
  seq text;
  grantee text;
BEGIN
  FOREACH t SLICE 1 IN ARRAY scoped LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t[1]);
    EXECUTE format('CREATE POLICY tenant_scope ON %I TO connect_tenant_scope USING (%s) WITH CHECK (%s)',
                   t[1], t[2], t[2]);
    EXECUTE format('CREATE POLICY all_tenants ON %I TO connect_all_tenants USING (true) WITH CHECK (true)', t[1]);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO connect_tenant_scope', t[1]);
    FOR seq IN
      SELECT pg_get_serial_sequence(quote_ident(t[1]), a.attname)
        FROM pg_attribute a WHERE a.attrelid = t[1]::regclass AND a.attnum > 0 AND NOT a.attisdropped
    LOOP
      IF seq IS NOT NULL THEN EXECUTE format('GRANT USAGE ON SEQUENCE %s TO connect_tenant_scope', seq); END IF;
    END LOOP;
  END LOOP;
  GRANT SELECT ON targets TO connect_tenant_scope;
  -- The event feed's head (one row, no tenant): a client's page is read with it in one snapshot.
  -- Only the unscoped gateway pool moves it (sequencing, pruning).
  GRANT SELECT ON event_feed_head TO connect_tenant_scope;

  -- Login roles that read these tables before this migration (a service role of
  -- ops/postgres/service-role.sql) keep reading every tenant's rows: without this, workers running
  -- as one would see no rows from here until an operator re-ran that file.
  FOR grantee IN
    SELECT r.rolname FROM pg_roles r
     WHERE r.rolcanlogin AND NOT r.rolsuper AND NOT r.rolbypassrls
       AND r.oid <> (SELECT relowner FROM pg_class WHERE oid = 'import_jobs'::regclass)
       AND has_table_privilege(r.oid, 'import_jobs', 'SELECT')
       AND NOT pg_has_role(r.oid, 'connect_all_tenants', 'MEMBER')
  LOOP
    BEGIN
      EXECUTE format('GRANT connect_all_tenants TO %I', grantee);
      RAISE NOTICE 'granted connect_all_tenants to %: it reads every tenant''s rows as before', grantee;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE WARNING 'role % reads tenant tables but is not in connect_all_tenants: it now sees no rows of them',
        grantee USING HINT = format('Have an administrator run: GRANT connect_all_tenants TO %I;', grantee);
    END;
  END LOOP;

  -- The user that migrates also runs the gateway in most deployments: it must be able to take the
  -- scope role (superusers always can).
  IF NOT pg_has_role(current_user, 'connect_tenant_scope', 'MEMBER') THEN
    BEGIN
      EXECUTE format('GRANT connect_tenant_scope TO %I', current_user);
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE WARNING '% is not a member of connect_tenant_scope: a gateway connecting as it cannot serve tenant data',
        current_user USING HINT = format('Have an administrator run: GRANT connect_tenant_scope TO %I;', current_user);
    END;
  END IF;
END $$;

-- Down Migration
DO $$
DECLARE
  t text;
BEGIN
  FOR t IN SELECT tablename FROM pg_policies WHERE schemaname = 'public' AND policyname = 'tenant_scope' LOOP
    EXECUTE format('DROP POLICY tenant_scope ON %I', t);
    EXECUTE format('DROP POLICY all_tenants ON %I', t);
    EXECUTE format('ALTER TABLE %I DISABLE ROW LEVEL SECURITY', t);
    EXECUTE format('REVOKE ALL ON %I FROM connect_tenant_scope', t);
  END LOOP;
END $$;
REVOKE ALL ON targets FROM connect_tenant_scope;
REVOKE ALL ON event_feed_head FROM connect_tenant_scope;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM connect_tenant_scope;
DROP FUNCTION connect_scope_tenant();
