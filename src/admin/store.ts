import type { Pool, PoolClient } from '../shared/db/pool.js';
import { iso } from '../shared/iso-time.js';

// SQL of the admin CLI. Multi-row writes go through unnest() so a whole set is one statement;
// inserts that hang off a parent join the parent, so a missing parent yields fewer rows
// returned instead of a foreign-key error.

export type Db = Pool | PoolClient;

export async function insertTenant(
  db: Db,
  t: { id: string; name: string },
): Promise<{ tenantId: string; name: string }> {
  const { rows } = await db.query('INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING id, name', [t.id, t.name]);
  return { tenantId: rows[0].id, name: rows[0].name };
}

export type NewClient = { id: string; tenantId: string; name: string; rateLimitPerMinute: number | null };
export type ClientRow = { clientId: string; tenantId: string; name: string; rateLimitPerMinute: number | null };

/** Inserts the clients whose tenant exists; returns those inserted. */
export async function insertClients(db: Db, clients: NewClient[]): Promise<ClientRow[]> {
  const { rows } = await db.query(
    `INSERT INTO integration_clients (id, tenant_id, name, rate_limit_per_minute)
     SELECT u.id, u.tenant_id, u.name, u.rate_limit
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::integer[]) AS u(id, tenant_id, name, rate_limit)
       JOIN tenants t ON t.id = u.tenant_id
     RETURNING id, tenant_id, name, rate_limit_per_minute`,
    [
      clients.map((c) => c.id),
      clients.map((c) => c.tenantId),
      clients.map((c) => c.name),
      clients.map((c) => c.rateLimitPerMinute),
    ],
  );
  return rows.map((r) => ({
    clientId: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    rateLimitPerMinute: r.rate_limit_per_minute,
  }));
}

export async function setClientRateLimit(
  db: Db,
  clientId: string,
  perMinute: number | null,
): Promise<{ clientId: string; rateLimitPerMinute: number | null } | null> {
  const { rows } = await db.query(
    'UPDATE integration_clients SET rate_limit_per_minute = $2 WHERE id = $1 RETURNING id, rate_limit_per_minute',
    [clientId, perMinute],
  );
  const r = rows[0];
  return r ? { clientId: r.id, rateLimitPerMinute: r.rate_limit_per_minute } : null;
}

export async function setClientUploadQuota(
  db: Db,
  clientId: string,
  bytesPerSecond: number | null,
): Promise<{ clientId: string; uploadBytesPerSecond: number | null } | null> {
  const { rows } = await db.query(
    'UPDATE integration_clients SET upload_bytes_per_second = $2 WHERE id = $1 RETURNING id, upload_bytes_per_second',
    [clientId, bytesPerSecond],
  );
  const r = rows[0];
  return r ? { clientId: r.id, uploadBytesPerSecond: r.upload_bytes_per_second } : null;
}

/** The client's tenant; null when there is no such client. */
export async function tenantOfClient(db: Db, clientId: string): Promise<string | null> {
  const { rows } = await db.query('SELECT tenant_id FROM integration_clients WHERE id = $1', [clientId]);
  return (rows[0]?.tenant_id as string | undefined) ?? null;
}

export type NewApiKey = {
  id: string;
  clientId: string;
  prefix: string;
  hash: Buffer;
  expiresAt: Date | null;
  scopes: readonly string[];
};
export type ApiKeyRow = { keyId: string; clientId: string; prefix: string; expiresAt: string | null };

/**
 * Inserts the keys whose client exists, with their scopes; returns those inserted. Two
 * statements: run it inside a transaction. Only the prefix and the SHA-256 are stored.
 */
export async function insertApiKeys(tx: PoolClient, keys: NewApiKey[]): Promise<ApiKeyRow[]> {
  const { rows } = await tx.query(
    `INSERT INTO api_keys (id, client_id, prefix, key_hash, expires_at)
     SELECT u.id, u.client_id, u.prefix, u.key_hash, u.expires_at
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bytea[], $5::timestamptz[])
            AS u(id, client_id, prefix, key_hash, expires_at)
       JOIN integration_clients c ON c.id = u.client_id
     RETURNING id, client_id, prefix, expires_at`,
    [
      keys.map((k) => k.id),
      keys.map((k) => k.clientId),
      keys.map((k) => k.prefix),
      keys.map((k) => k.hash),
      keys.map((k) => k.expiresAt),
    ],
  );
  const inserted = new Set<string>(rows.map((r) => r.id));
  const pairs = keys.filter((k) => inserted.has(k.id)).flatMap((k) => k.scopes.map((s) => [k.id, s] as const));
  if (pairs.length > 0) {
    await tx.query(`INSERT INTO api_key_scopes (api_key_id, scope) SELECT * FROM unnest($1::uuid[], $2::text[])`, [
      pairs.map((p) => p[0]),
      pairs.map((p) => p[1]),
    ]);
  }
  return rows.map((r) => ({ keyId: r.id, clientId: r.client_id, prefix: r.prefix, expiresAt: iso(r.expires_at) }));
}

export type ApiKeyListing = {
  keyId: string;
  prefix: string;
  scopes: string[];
  expiresAt: string | null;
  revokedAt: string | null;
  createdAt: string;
};

/** A client's keys, oldest first; never the key or its hash. */
export async function listApiKeys(db: Db, clientId: string): Promise<ApiKeyListing[]> {
  const { rows } = await db.query(
    `SELECT k.id, k.prefix, k.expires_at, k.revoked_at, k.created_at,
            coalesce(array_agg(s.scope) FILTER (WHERE s.scope IS NOT NULL), '{}') AS scopes
       FROM api_keys k
       LEFT JOIN api_key_scopes s ON s.api_key_id = k.id
      WHERE k.client_id = $1
      GROUP BY k.id
      ORDER BY k.created_at, k.id`,
    [clientId],
  );
  return rows.map((r) => ({
    keyId: r.id,
    prefix: r.prefix,
    scopes: r.scopes,
    expiresAt: iso(r.expires_at),
    revokedAt: iso(r.revoked_at),
    createdAt: iso(r.created_at)!,
  }));
}

export type KeyLookup = { by: 'id'; id: string } | { by: 'prefix'; prefix: string } | { by: 'hash'; hash: Buffer };

/** Ids of the keys matching (at most `limit`, oldest first). */
export async function findApiKeyIds(db: Db, lookup: KeyLookup, limit = 10): Promise<string[]> {
  const [column, value] =
    lookup.by === 'id'
      ? ['id', lookup.id]
      : lookup.by === 'prefix'
        ? ['prefix', lookup.prefix]
        : ['key_hash', lookup.hash];
  const { rows } = await db.query(`SELECT id FROM api_keys WHERE ${column} = $1 ORDER BY created_at, id LIMIT $2`, [
    value,
    limit,
  ]);
  return rows.map((r) => r.id as string);
}

/** Sets revoked_at unless already set, so a second revocation keeps the first time. */
export async function revokeApiKey(db: Db, keyId: string): Promise<{ keyId: string; revokedAt: string } | null> {
  const { rows } = await db.query(
    'UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id, revoked_at',
    [keyId],
  );
  const r = rows[0];
  return r ? { keyId: r.id, revokedAt: iso(r.revoked_at)! } : null;
}

// ---- demo data -------------------------------------------------------------------------

export type NewInventoryItem = {
  id: string;
  name: string;
  sku: string;
  categoryName: string;
  unitOfMeasure: string;
  trackStock: boolean;
  defaultQuantity: number | null;
  lowStockThreshold: number | null;
};

export async function insertInventoryItems(db: Db, tenantId: string, items: NewInventoryItem[]): Promise<void> {
  await db.query(
    `INSERT INTO inventory_items
            (id, tenant_id, name, sku, category_name, unit_of_measure, track_stock, default_quantity, low_stock_threshold)
     SELECT u.id, $1, u.name, u.sku, u.category_name, u.unit_of_measure, u.track_stock, u.default_quantity, u.low_stock_threshold
       FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::numeric[], $9::numeric[])
            AS u(id, name, sku, category_name, unit_of_measure, track_stock, default_quantity, low_stock_threshold)`,
    [
      tenantId,
      items.map((i) => i.id),
      items.map((i) => i.name),
      items.map((i) => i.sku),
      items.map((i) => i.categoryName),
      items.map((i) => i.unitOfMeasure),
      items.map((i) => i.trackStock),
      items.map((i) => i.defaultQuantity),
      items.map((i) => i.lowStockThreshold),
    ],
  );
}

export type NewInventoryLocation = {
  id: string;
  name: string;
  externalCode: string;
  locationType: string;
  isDefault: boolean;
};

export async function insertInventoryLocations(
  db: Db,
  tenantId: string,
  locations: NewInventoryLocation[],
): Promise<void> {
  await db.query(
    `INSERT INTO inventory_locations (id, tenant_id, name, external_code, location_type, is_default)
     SELECT u.id, $1, u.name, u.external_code, u.location_type, u.is_default
       FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::boolean[])
            AS u(id, name, external_code, location_type, is_default)`,
    [
      tenantId,
      locations.map((l) => l.id),
      locations.map((l) => l.name),
      locations.map((l) => l.externalCode),
      locations.map((l) => l.locationType),
      locations.map((l) => l.isDefault),
    ],
  );
}

export type NewBalance = { itemId: string; locationId: string; quantityOnHand: number };

export async function insertInventoryBalances(db: Db, tenantId: string, balances: NewBalance[]): Promise<void> {
  await db.query(
    `INSERT INTO inventory_balances (tenant_id, item_id, location_id, quantity_on_hand)
     SELECT $1, u.item_id, u.location_id, u.quantity_on_hand
       FROM unnest($2::uuid[], $3::uuid[], $4::numeric[]) AS u(item_id, location_id, quantity_on_hand)`,
    [tenantId, balances.map((b) => b.itemId), balances.map((b) => b.locationId), balances.map((b) => b.quantityOnHand)],
  );
}

export type NewWorkOrder = { externalWorkOrderId: string; title: string };

/** Returns the assigned int32 ids in input order. */
export async function insertWorkOrders(
  db: Db,
  tenantId: string,
  workOrders: NewWorkOrder[],
): Promise<{ workOrderId: number; externalWorkOrderId: string }[]> {
  const { rows } = await db.query(
    `INSERT INTO work_orders (tenant_id, external_work_order_id, title)
     SELECT $1, u.external_id, u.title
       FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(external_id, title, ord)
      ORDER BY u.ord
     RETURNING id, external_work_order_id`,
    [tenantId, workOrders.map((w) => w.externalWorkOrderId), workOrders.map((w) => w.title)],
  );
  const byExternal = new Map<string, number>(rows.map((r) => [r.external_work_order_id, r.id]));
  return workOrders.map((w) => ({
    workOrderId: byExternal.get(w.externalWorkOrderId)!,
    externalWorkOrderId: w.externalWorkOrderId,
  }));
}

/** The tenant's job types (codes a job-creation request may name). */
export async function insertJobTypes(
  db: Db,
  tenantId: string,
  types: readonly { code: string; name: string; defaultDurationMinutes: number | null }[],
): Promise<void> {
  await db.query(
    `INSERT INTO job_types (tenant_id, code, name, default_duration_minutes)
     SELECT $1, u.code, u.name, u.minutes FROM unnest($2::text[], $3::text[], $4::int[]) AS u(code, name, minutes)`,
    [tenantId, types.map((t) => t.code), types.map((t) => t.name), types.map((t) => t.defaultDurationMinutes)],
  );
}
