import pg from 'pg';
import type { Pool, PoolClient } from './pool.js';

// The one way the gateway's request paths reach tenant data (issue 25): a transaction that
// PostgreSQL's row-level security limits to one tenant (migrations/0017_tenant_row_security.sql).
// Inside it, a statement sees and writes only that tenant's rows whatever its WHERE says; the
// stores' own tenant/client conditions stay as a second line. Workers and the admin CLI work
// across tenants and do not use it: they connect as the tables' owner or as a member of
// connect_all_tenants (docs/operations.md).

/** The role a scoped transaction takes: it bypasses nothing, and its policies key on connect.tenant_id. */
export const tenantScopeRole = 'connect_tenant_scope';

declare const scoped: unique symbol;
/**
 * A connection inside a tenant-scoped transaction. The brand exists only for the compiler: a
 * store that takes a TenantTx cannot be handed the pool or an unscoped client.
 */
export type TenantTx = PoolClient & { readonly [scoped]: true };

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * BEGIN, the role and the tenant in one simple-protocol round trip (no parameters there, so the
 * tenant id is checked to be a UUID and quoted). All three end with the transaction.
 */
function beginSql(tenantId: string): string {
  if (!uuid.test(tenantId)) throw new Error(`tenant scope: ${JSON.stringify(tenantId)} is not a tenant id`);
  return `BEGIN; SET LOCAL ROLE ${tenantScopeRole}; SET LOCAL connect.tenant_id = ${pg.escapeLiteral(tenantId)}`;
}

/** Begins a tenant-scoped transaction on a client the caller holds (and commits or rolls back). */
export async function beginTenantScope(client: PoolClient, tenantId: string): Promise<TenantTx> {
  await client.query(beginSql(tenantId));
  return client as TenantTx;
}

/**
 * Runs fn in one transaction scoped to the tenant: commit on success, rollback on any error. A
 * connection whose rollback failed is destroyed rather than returned to the pool in an unknown state.
 */
export async function withTenant<T>(pool: Pool, tenantId: string, fn: (tx: TenantTx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const result = await fn(await beginTenantScope(client, tenantId));
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    client.release(broken);
  }
}
