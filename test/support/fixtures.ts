import type { Command } from '../../src/admin/command.js';
import { clientCreate, clientRateLimit, clientUploadQuota } from '../../src/admin/commands/client.js';
import { demo } from '../../src/admin/commands/demo.js';
import { keyCreate, keyRevoke } from '../../src/admin/commands/key.js';
import type { Pool } from '../../src/shared/db/pool.js';

// Test data is made the way operators make it: through the admin CLI's commands.

export async function admin<I>(pool: Pool, command: Command<I>, args: string[]): Promise<any> {
  return command.run({ pool, warn: () => undefined }, command.parse(args));
}

export type Demo = {
  tenantId: string;
  clients: Record<string, { clientId: string; apiKey: string }>;
  workOrders: { workOrderId: number; externalWorkOrderId: string }[];
};

export const createDemo = (pool: Pool): Promise<Demo> => admin(pool, demo, []);

export async function createClientWithKey(
  pool: Pool,
  tenantId: string,
  scopes: string,
  extraKeyArgs: string[] = [],
): Promise<{ clientId: string; apiKey: string; keyId: string }> {
  const client = await admin(pool, clientCreate, ['--tenant', tenantId, '--name', 'test client']);
  const key = await admin(pool, keyCreate, ['--client', client.clientId, '--scopes', scopes, ...extraKeyArgs]);
  return { clientId: client.clientId, apiKey: key.apiKey, keyId: key.keyId };
}

export const revokeKey = (pool: Pool, keyId: string) => admin(pool, keyRevoke, ['--key', keyId]);

export const setRateLimit = (pool: Pool, clientId: string, perMinute: number) =>
  admin(pool, clientRateLimit, ['--client', clientId, '--per-minute', String(perMinute)]);

export const setUploadQuota = (pool: Pool, clientId: string, bytesPerSecond: number) =>
  admin(pool, clientUploadQuota, ['--client', clientId, '--bytes-per-second', String(bytesPerSecond)]);

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** An import job row of the given client, as the gateway records one (for read tests). */
export async function insertImportJob(pool: Pool, caller: { tenantId: string; clientId: string }): Promise<number> {
  const { rows } = await pool.query(
    `INSERT INTO import_jobs (tenant_id, client_id, kind, source_system, request_hash, received_count, accepted_count,
                              rejected_count, chunk_count)
     VALUES ($1, $2, 'Single', 'fixture', '\\x00', 1, 1, 0, 1) RETURNING id`,
    [caller.tenantId, caller.clientId],
  );
  return Number(rows[0].id);
}

/** A finished import job of the caller with one routable target (for route-suggestion tests). */
export async function insertFinishedImportJob(
  pool: Pool,
  caller: { tenantId: string; clientId: string },
): Promise<number> {
  const id = await insertImportJob(pool, caller);
  await pool.query(`UPDATE import_jobs SET status = 'Completed', applied_count = 1, chunks_done = 1 WHERE id = $1`, [
    id,
  ]);
  await pool.query(
    `INSERT INTO targets (tenant_id, source_system, external_id, name, latitude, longitude, last_import_job_id, last_item_index)
     VALUES ($1, 'fixture', $2, 'Fixture site', 52.52, 13.41, $3, 0)`,
    [caller.tenantId, `fixture-${id}`, id],
  );
  return id;
}

/** A stored route suggestion draft of the caller. */
export async function insertRouteSuggestion(
  pool: Pool,
  caller: { tenantId: string; clientId: string },
): Promise<string> {
  const jobId = await insertFinishedImportJob(pool, caller);
  const { rows } = await pool.query(
    `INSERT INTO route_suggestions (id, tenant_id, client_id, import_job_id, request, result)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5) RETURNING id`,
    [
      caller.tenantId,
      caller.clientId,
      jobId,
      JSON.stringify({ date: '2026-11-23', vehicles: 1 }),
      JSON.stringify({
        routes: [],
        unplaced: [],
        totalDistanceKm: 0,
        totalDurationMinutes: 0,
        summary: { targets: 0, placed: 0, unplaced: 0 },
      }),
    ],
  );
  return rows[0].id;
}
