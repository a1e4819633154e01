// The integration scopes of spec part 5. migrations/0001 seeds the same names into
// `scopes` (a test checks both lists agree).
export const integrationScopes = [
  'connect.inventory.read',
  'connect.workorders.materials.read',
  'connect.workorders.materials.write',
  'connect.jobs.write',
  'import_jobs.read',
  'route_suggestions.create',
  'inbound.targets.write',
  'inbound.targets.batch.write',
  'integration.health.read',
] as const;

export type Scope = (typeof integrationScopes)[number];

export const isScope = (s: string): s is Scope => (integrationScopes as readonly string[]).includes(s);
