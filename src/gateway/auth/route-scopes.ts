import type { Scope } from '../../shared/scopes.js';

// The one table of which scope each integration operation needs (spec part 5).
// Keyed by "METHOD path-template"; an /api (API key) or /connect/v1 (access token) route missing
// here fails at start-up.
export const routeScopes: Record<string, Scope> = {
  'GET /api/v1/connect/inventory/items': 'connect.inventory.read',
  'GET /api/v1/connect/inventory/locations': 'connect.inventory.read',
  'GET /api/v1/connect/inventory/balances': 'connect.inventory.read',
  'GET /api/v1/connect/work-orders/{workOrderId}/materials': 'connect.workorders.materials.read',
  'POST /api/v1/connect/work-orders/{workOrderId}/materials': 'connect.workorders.materials.write',
  'POST /api/v1/connect/work-orders/by-external-id/{externalWorkOrderId}/materials':
    'connect.workorders.materials.write',
  'POST /api/connect/jobs': 'connect.jobs.write',
  'POST /api/v1/connect/jobs': 'connect.jobs.write',
  'GET /api/v1/import-jobs': 'import_jobs.read',
  'GET /api/v1/import-jobs/{id}': 'import_jobs.read',
  'POST /api/v1/import-jobs/{id}/route-suggestion': 'route_suggestions.create',
  'GET /api/v1/route-suggestions/{id}': 'route_suggestions.create',
  'POST /api/v1/inbound/targets': 'inbound.targets.write',
  'POST /api/v1/inbound/targets/batch': 'inbound.targets.batch.write',
  'GET /api/v1/integration/health': 'integration.health.read',
  'POST /connect/v1/appointment-requests': 'appointments.write',
  'GET /connect/v1/appointment-requests/{id}': 'appointments.read',
  'GET /connect/v1/appointment-requests/{id}/status': 'appointments.read',
  'POST /connect/v1/appointment-requests/{id}/cancel': 'appointments.write',
  'GET /api/v1/events': 'events.read',
  'POST /api/v1/webhook-endpoints': 'webhooks.manage',
  'GET /api/v1/webhook-endpoints': 'webhooks.manage',
  'GET /api/v1/webhook-endpoints/{endpointId}': 'webhooks.manage',
  'PATCH /api/v1/webhook-endpoints/{endpointId}': 'webhooks.manage',
  'DELETE /api/v1/webhook-endpoints/{endpointId}': 'webhooks.manage',
  'POST /api/v1/webhook-endpoints/{endpointId}/disable': 'webhooks.manage',
  'POST /api/v1/webhook-endpoints/{endpointId}/enable': 'webhooks.manage',
  'POST /api/v1/webhook-endpoints/{endpointId}/rotate-secret': 'webhooks.manage',
  'POST /api/v1/webhook-endpoints/{endpointId}/test': 'webhooks.manage',
  'GET /api/v1/webhook-endpoints/{endpointId}/attempts': 'webhooks.manage',
  'POST /api/v1/webhook-endpoints/{endpointId}/replay': 'webhooks.manage',
  'POST /api/v1/webhook-endpoints/{endpointId}/replay-failed': 'webhooks.manage',
};

export function scopeOf(method: string, pathTemplate: string): Scope | undefined {
  return routeScopes[`${method.toUpperCase()} ${pathTemplate}`];
}
