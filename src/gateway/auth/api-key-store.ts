import type { Pool } from '../../shared/db/pool.js';

export type ApiKeyRecord = {
  keyId: string;
  keyHash: Buffer;
  clientId: string;
  tenantId: string;
  scopes: string[];
  rateLimitPerMinute: number | null;
  uploadBytesPerSecond: number | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
};

const findByHashSql = `
  SELECT k.id AS key_id, k.key_hash, k.expires_at, k.revoked_at,
         c.id AS client_id, c.tenant_id, c.rate_limit_per_minute, c.upload_bytes_per_second,
         coalesce(array_agg(s.scope ORDER BY s.scope) FILTER (WHERE s.scope IS NOT NULL), '{}') AS scopes
    FROM api_keys k
    JOIN integration_clients c ON c.id = k.client_id
    LEFT JOIN api_key_scopes s ON s.api_key_id = k.id
   WHERE k.key_hash = $1
   GROUP BY k.id, c.id`;

export async function findApiKeyByHash(pool: Pool, hash: Buffer): Promise<ApiKeyRecord | null> {
  const { rows } = await pool.query(findByHashSql, [hash]);
  const r = rows[0];
  if (!r) return null;
  return {
    keyId: r.key_id,
    keyHash: r.key_hash,
    clientId: r.client_id,
    tenantId: r.tenant_id,
    scopes: r.scopes,
    rateLimitPerMinute: r.rate_limit_per_minute,
    uploadBytesPerSecond: r.upload_bytes_per_second,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
  };
}
