// The integration scopes of spec part 5, plus the appointment scopes (spec part 5.4 leaves them
// open; they are carried by OAuth2 access tokens on /connect/v1), and the self-service scopes of the
// webhook endpoints and the event feed. migrations/0001, 0005 and 0016 seed
// the same names into `scopes` (a test checks both lists agree).
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
  'appointments.read',
  'appointments.write',
  'webhooks.manage',
  'events.read',
] as const;

export type Scope = (typeof integrationScopes)[number];

export const isScope = (s: string): s is Scope => (integrationScopes as readonly string[]).includes(s);
