import { defaultAverageSpeedKmh, type DraftDocument } from '../../routing/index.js';
import type { TenantTx } from '../../shared/db/tenant-scope.js';
import type { CreateRouteSuggestion, RouteSuggestionDto } from './schemas.js';

export async function findJobStatus(tx: TenantTx, clientId: string, importJobId: string): Promise<string | null> {
  const { rows } = await tx.query('SELECT status FROM import_jobs WHERE id = $1 AND client_id = $2', [
    importJobId,
    clientId,
  ]);
  return rows[0]?.status ?? null;
}

const jobTargetsWhere = 'tenant_id = $1 AND last_import_job_id = $2';

/** How many targets the job's current data holds (counted up to `upTo`) and the most windows one
 *  has: PostgreSQL counts, so a job over the limits is refused before the gateway reads a row. */
export async function jobTargetCounts(
  tx: TenantTx,
  tenantId: string,
  importJobId: string,
  upTo: number,
): Promise<{ targets: number; maxWindows: number }> {
  const { rows } = await tx.query(
    `SELECT count(*)::int AS targets, coalesce(max(jsonb_array_length(time_windows)), 0) AS max_windows
       FROM (SELECT time_windows FROM tenant_targets WHERE ${jobTargetsWhere} LIMIT $3) t`,
    [tenantId, importJobId, upTo],
  );
  return { targets: rows[0].targets, maxWindows: rows[0].max_windows };
}

/** The targets whose current data came from this import job, in a stable order, as one JSON text
 *  of ImportedTarget[] (src/routing): the routing worker parses it, not the gateway's event loop. */
export async function jobTargetsJson(tx: TenantTx, tenantId: string, importJobId: string): Promise<string> {
  const { rows } = await tx.query(
    `SELECT coalesce(json_agg(json_build_object(
              'externalId', external_id, 'lat', latitude, 'lon', longitude, 'timeWindows', time_windows,
              'serviceMinutes', service_duration_minutes, 'priority', priority)
            ORDER BY last_item_index, external_id), '[]')::text AS targets
       FROM tenant_targets WHERE ${jobTargetsWhere}`,
    [tenantId, importJobId],
  );
  return rows[0].targets;
}

/** `documentJson` (the worker's JSON text of the computed draft) is stored as it is. */
export async function insertSuggestion(
  tx: TenantTx,
  s: {
    tenantId: string;
    clientId: string;
    request: CreateRouteSuggestion;
    header: Pick<RouteSuggestionDto, 'id' | 'importJobId' | 'name' | 'createdAt'>;
    documentJson: string;
  },
): Promise<void> {
  await tx.query(
    `INSERT INTO route_suggestions (id, tenant_id, client_id, import_job_id, name, request, result, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      s.header.id,
      s.tenantId,
      s.clientId,
      s.header.importJobId,
      s.header.name,
      JSON.stringify(s.request),
      s.documentJson,
      s.header.createdAt,
    ],
  );
}

/** A stored draft as the answer's JSON text (as its POST answered it; the document's members in
 *  PostgreSQL's jsonb order), without parsing the document. */
export async function findSuggestion(tx: TenantTx, clientId: string, id: string): Promise<string | null> {
  const { rows } = await tx.query(
    `SELECT id, import_job_id, name, status, request, result::text AS result, created_at FROM route_suggestions
      WHERE id = $1 AND client_id = $2`,
    [id, clientId],
  );
  const r = rows[0];
  if (!r) return null;
  const header: DraftHeader = {
    id: r.id,
    importJobId: Number(r.import_job_id),
    name: r.name,
    status: r.status,
    createdAt: r.created_at.toISOString(),
    date: r.request.date,
    timeZone: r.request.timeZone ?? 'UTC',
    vehicles: r.request.vehicles,
    averageSpeedKmh: r.request.averageSpeedKmh ?? defaultAverageSpeedKmh,
  };
  return answerJson(header, r.result);
}

/** The answer's members before the worker's document: what only the gateway knows, or takes from
 *  the request. Stored as columns and the request, the document as `result`. */
export type DraftHeader = Omit<RouteSuggestionDto, keyof DraftDocument>;
// The worker's document has the schema's shape for the rest: the compiler checks it here.
const _documentFitsSchema = (d: DraftDocument): Omit<RouteSuggestionDto, keyof DraftHeader> => d;

/** The answer: the header's members, then the document's, as JSON.stringify of one
 *  RouteSuggestionDto would write them, without parsing the document. */
export const answerJson = (header: DraftHeader, documentJson: string): string =>
  `${JSON.stringify(header).slice(0, -1)},${documentJson.slice(1)}`;
