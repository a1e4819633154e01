/**
 * A timestamp as the API, events and the admin CLI write it: ISO 8601 in UTC. PostgreSQL gives
 * Dates (some rows carry text); null and undefined stay null.
 */
export function iso(d: Date | string): string;
export function iso(d: Date | string | null | undefined): string | null;
export function iso(d: Date | string | null | undefined): string | null {
  return d == null ? null : new Date(d).toISOString();
}
