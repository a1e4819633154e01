import type { Pool } from '../../shared/db/pool.js';
import type { CreateRouteSuggestion, RouteSuggestionDto } from './schemas.js';

export type JobTargetRow = {
  external_id: string;
  latitude: number | null;
  longitude: number | null;
  time_windows: { start: string; end: string }[];
  service_duration_minutes: number | null;
  priority: number | null;
};

export async function findJobStatus(pool: Pool, clientId: string, importJobId: string): Promise<string | null> {
  const { rows } = await pool.query('SELECT status FROM import_jobs WHERE id = $1 AND client_id = $2', [
    importJobId,
    clientId,
  ]);
  return rows[0]?.status ?? null;
}

/** The targets whose current data came from this import job, in a stable order. */
export async function jobTargets(pool: Pool, tenantId: string, importJobId: string): Promise<JobTargetRow[]> {
  const { rows } = await pool.query(
    `SELECT external_id, latitude, longitude, time_windows, service_duration_minutes, priority
       FROM targets WHERE tenant_id = $1 AND last_import_job_id = $2 ORDER BY last_item_index, external_id`,
    [tenantId, importJobId],
  );
  return rows;
}

export async function insertSuggestion(
  pool: Pool,
  s: { tenantId: string; clientId: string; request: CreateRouteSuggestion; dto: RouteSuggestionDto },
): Promise<void> {
  const { routes, unplaced, totalDistanceKm, totalDurationMinutes, summary } = s.dto;
  await pool.query(
    `INSERT INTO route_suggestions (id, tenant_id, client_id, import_job_id, name, request, result, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      s.dto.id,
      s.tenantId,
      s.clientId,
      s.dto.importJobId,
      s.dto.name,
      JSON.stringify(s.request),
      JSON.stringify({ routes, unplaced, totalDistanceKm, totalDurationMinutes, summary }),
      s.dto.createdAt,
    ],
  );
}

export async function findSuggestion(pool: Pool, clientId: string, id: string): Promise<RouteSuggestionDto | null> {
  const { rows } = await pool.query(
    `SELECT id, import_job_id, name, status, request, result, created_at FROM route_suggestions
      WHERE id = $1 AND client_id = $2`,
    [id, clientId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    id: r.id,
    importJobId: Number(r.import_job_id),
    name: r.name,
    status: r.status,
    createdAt: r.created_at.toISOString(),
    date: r.request.date,
    timeZone: r.request.timeZone ?? 'UTC',
    vehicles: r.request.vehicles,
    averageSpeedKmh: r.request.averageSpeedKmh ?? 40,
    ...r.result,
  };
}
