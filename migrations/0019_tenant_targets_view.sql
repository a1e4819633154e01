-- Up Migration
-- targets inside the tenant scope (issue 25). The table cannot have row-level security:
-- PostgreSQL refuses COPY FROM into it for every role a policy binds, and the inbound worker COPYs
-- new targets straight in. Until now the scope role could SELECT the table itself, guarded by the
-- stores' own conditions alone. Now it reads targets only through this view, which keeps the rows
-- of the tenant the connection serves (connect.tenant_id, as the policies of 0017/0018) and none
-- without one; the table itself is no longer granted to the scope (a scoped statement on it fails
-- with 42501). The view runs with its owner's rights (who owns targets), so the workers' COPY and
-- the admin CLI are unchanged. security_barrier: no function of a caller's WHERE sees a row of
-- another tenant before the view's own condition has dropped it.
-- SELECT * is expanded now: a later migration that adds a column to targets re-creates the view.
CREATE VIEW tenant_targets WITH (security_barrier = true) AS
  SELECT * FROM targets WHERE tenant_id = (SELECT connect_scope_tenant());
REVOKE ALL ON targets FROM connect_tenant_scope;
GRANT SELECT ON tenant_targets TO connect_tenant_scope;

-- Down Migration
DROP VIEW tenant_targets;
GRANT SELECT ON targets TO connect_tenant_scope;
