import { isPostgresUnavailable } from './errors.js';
import { createPool, transactionOn, unusableAfter, type Pool, type PoolClient, type PoolOptions } from './pool.js';
import { TenantShares, type TenantSharesOptions, type TenantSharesStats } from './tenant-shares.js';

// The one way the gateway's request paths reach tenant data (issue 25): connections that
// PostgreSQL's row-level security limits to one tenant (migrations/0017_tenant_row_security.sql).
// On them, a statement sees and writes only that tenant's rows whatever its WHERE says; the
// stores' own tenant/client conditions stay as a second line. Workers and the admin CLI work
// across tenants and do not use it: they connect as the tables' owner or as a member of
// connect_all_tenants (docs/operations.md).
//
// Cost: a connection of a TenantPool takes the scope role once, with its first tenant, and keeps
// both at session level; a checkout for another tenant than the connection last served costs one
// statement (set_config), one for the same tenant none. Reads need no transaction. The pools are
// private to this module, so no statement ever runs on their connections unscoped or under a
// tenant it did not ask for; a connection whose scope could not be set is destroyed, not reused.

/** The role scoped connections take: it bypasses nothing, and its policies key on connect.tenant_id. */
export const tenantScopeRole = 'connect_tenant_scope';

declare const scoped: unique symbol;
/**
 * A connection scoped to one tenant. The brand exists only for the compiler: a store that takes
 * a TenantTx cannot be handed a pool or an unscoped client.
 */
export type TenantTx = PoolClient & { readonly [scoped]: true };

/** Connections that serve one tenant per checkout (see above); the only source of a TenantTx. */
export type TenantPool = {
  /** Runs fn on a connection scoped to the tenant, each statement on its own (no transaction): reads, one-statement writes. */
  run<T>(tenantId: string, fn: (tx: TenantTx) => Promise<T>): Promise<T>;
  /** Runs fn in one transaction scoped to the tenant: commit on success, rollback on any error. */
  transaction<T>(tenantId: string, fn: (tx: TenantTx) => Promise<T>): Promise<T>;
  /**
   * A connection scoped to the tenant, for a caller that runs its own transaction
   * (recordThenProduce). It must end that transaction and release the connection: release(err)
   * when it cannot tell the connection's state (a failed rollback) or PostgreSQL is not serving
   * writes on it (pool.ts unusableAfter), which destroys it.
   */
  connect(tenantId: string): Promise<TenantTx>;
  /** The most connections the pool opens. */
  readonly max: number;
  /** How the tenants' checkouts went (tenant-shares.ts); absent without shares. */
  shares(): TenantSharesStats | undefined;
  end(): Promise<void>;
};

/** Each tenant's share of the pool (tenant-shares.ts); without it, first come first served. */
export type TenantPoolOptions = PoolOptions & { shares?: Omit<TenantSharesOptions, 'max'> };

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createTenantPool(
  databaseUrl: string,
  max: number,
  applicationName: string,
  options: TenantPoolOptions = {},
): TenantPool {
  const pool = createPool(databaseUrl, max, applicationName, options);
  const shares = options.shares && new TenantShares({ ...options.shares, max });
  // The tenant each connection last took successfully, outside any transaction (so no rollback
  // undoes it). Absent: the connection has not taken the scope role yet.
  const tenantOf = new WeakMap<PoolClient, string>();

  async function connect(tenantId: string): Promise<TenantTx> {
    if (!uuid.test(tenantId)) throw new Error(`tenant scope: ${JSON.stringify(tenantId)} is not a tenant id`);
    const releaseShare = shares ? await shares.take(tenantId) : undefined;
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      releaseShare?.();
      throw err;
    }
    if (releaseShare) {
      // pg-pool gives each checkout its own release; the share goes back with the connection.
      const releaseConnection = client.release;
      client.release = (err?: Error | boolean) => {
        releaseConnection.call(client, err);
        releaseShare();
      };
    }
    if (tenantOf.get(client) === tenantId) return client as TenantTx;
    try {
      // Role and tenant in one round trip; set_config(…, false): for the session, not a transaction.
      await client.query(
        tenantOf.has(client)
          ? `SELECT set_config('connect.tenant_id', $1, false)`
          : `SELECT set_config('role', '${tenantScopeRole}', false), set_config('connect.tenant_id', $1, false)`,
        [tenantId],
      );
    } catch (err) {
      // Whatever state it is in (the old tenant, no role), nobody gets it again.
      tenantOf.delete(client);
      client.release(err as Error);
      throw err;
    }
    tenantOf.set(client, tenantId);
    return client as TenantTx;
  }

  return {
    max,
    shares: () => shares?.stats(),
    connect,
    async run(tenantId, fn) {
      const tx = await connect(tenantId);
      let broken: Error | undefined;
      try {
        return await fn(tx);
      } catch (err) {
        broken = unusableAfter(err); // e.g. 25006: a read-only old primary is not kept
        throw err;
      } finally {
        tx.release(broken);
      }
    },
    transaction: async (tenantId, fn) => transactionOn(await connect(tenantId), fn),
    end: () => pool.end(),
  };
}

/**
 * At the gateway's start: refuses (throws, saying what to grant) when DATABASE_URL's role cannot
 * take the scope role, for every tenant request would fail. Tried as a scoped connection does,
 * in a transaction rolled back. PostgreSQL unreachable is no verdict: the pools wait for it as in
 * any outage, and each scoped connection fails alone if the role is still refused.
 */
export async function checkTenantScopeRole(pool: Pool): Promise<void> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    if (isPostgresUnavailable(err)) return;
    throw err;
  }
  let login: string | undefined;
  let broken: Error | undefined;
  try {
    login = (await client.query<{ login: string }>('SELECT current_user AS login')).rows[0]!.login;
    await client.query(`BEGIN; SET LOCAL ROLE ${tenantScopeRole}`);
  } catch (err) {
    broken = unusableAfter(err);
    if (broken) return;
    if (login === undefined) throw err;
    throw new Error(
      `PostgreSQL role ${login} (DATABASE_URL) cannot take the tenant scope role: ${(err as Error).message}; ` +
        `have an administrator run GRANT ${tenantScopeRole} TO ${login} (docs/operations.md, "Tenant scope")`,
    );
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release(broken);
  }
}
