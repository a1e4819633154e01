-- The least privilege the service's processes need: read and write the rows of the tables the
-- migrations made, nothing else (no DDL, no ownership, not the migrations' own ledger).
--
-- Run as the role that owns the tables (the one `npm run migrate` runs as), once, after the first
-- migration, for the login role the gateway and workers use in DATABASE_URL:
--
--   psql "$OWNER_DATABASE_URL" -v service_role=connect_service -f ops/postgres/service-role.sql
--
-- Default privileges make the tables of later migrations (run by the same owner) readable and
-- writable by the service role too; running this file again is harmless.
\set ON_ERROR_STOP on

GRANT USAGE ON SCHEMA public TO :"service_role";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"service_role";
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO :"service_role";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO :"service_role";

ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"service_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO :"service_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO :"service_role";

-- Tenant scope (migrations/0017_tenant_row_security.sql): the gateway's request paths take
-- connect_tenant_scope per transaction and see one tenant's rows; everything else the service does
-- (workers, the admin CLI, authentication) works across tenants as a member of connect_all_tenants.
-- Without the first, the gateway cannot serve tenant data; without the second, the tenant tables
-- show this role no row at all.
GRANT connect_tenant_scope, connect_all_tenants TO :"service_role";

-- The migrations' ledger is the owner's alone.
REVOKE ALL ON TABLE pgmigrations FROM :"service_role";
-- Nobody but the owner creates objects in the schema (PostgreSQL 15+ does this by default).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
