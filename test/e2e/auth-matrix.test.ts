import { beforeAll, describe, expect, it } from 'vitest';
import { routeScopes } from '../../src/gateway/auth/route-scopes.js';
import { generateApiKey } from '../../src/shared/api-keys.js';
import { sendTestEvent } from '../../src/shared/webhooks/endpoint-deliveries.js';
import { createEndpoint, findEndpoint } from '../../src/shared/webhooks/endpoints.js';
import {
  bearer,
  createClientWithKey,
  insertFinishedImportJob,
  insertImportJob,
  insertRouteSuggestion,
  revokeKey,
} from '../support/fixtures.js';
import { useGatewaySuite } from '../support/suite.js';

// A valid request for every integration operation built so far. The matrix below runs each
// credential case against each of them; an operation in the OpenAPI document without an
// entry here fails the test, so new routes join the matrix.
type Caller = { clientId: string; tenantId: string };
type ValidRequest = {
  method: string;
  path: string | ((caller: Caller) => Promise<string>);
  body?: unknown | (() => unknown);
};
// A public address literal: passes the SSRF policy without DNS.
const publicHook = 'https://93.184.215.14/hooks';
let lastTestEventId = '';
/** A path under a new webhook endpoint of the caller, which has one test event (for replay). */
const endpointPath =
  (suffix: string) =>
  async (c: Caller): Promise<string> => {
    const created = await createEndpoint(suite.pool, { ...c, url: publicHook, eventTypes: '*' });
    const endpoint = await findEndpoint(suite.pool, { endpointId: created.endpointId });
    lastTestEventId = (await sendTestEvent(suite.pool, endpoint!)).id;
    return `/api/v1/webhook-endpoints/${created.endpointId}${suffix}`;
  };
let jobCount = 0;
const jobBody = () => ({
  externalId: `AUTH-${++jobCount}`,
  title: 'Auth matrix job',
  jobType: 'REPAIR',
  customer: { name: 'ACME' },
  site: { address: { line1: 'Main 1', city: 'Berlin', countryCode: 'DE' } },
});
const materialUsage = {
  externalEventId: 'auth-usage-1',
  usedAt: '2025-06-01T09:30:00+02:00',
  materials: [{ sku: 'CU-PIPE-15', quantity: 1, unitOfMeasure: 'm' }],
};
const target = { externalId: 'auth-1', name: 'Auth matrix site', coordinates: { latitude: 52.5, longitude: 13.4 } };
const validRequests: Record<string, ValidRequest> = {
  listInventoryItems: { method: 'get', path: '/api/v1/connect/inventory/items' },
  listInventoryLocations: { method: 'get', path: '/api/v1/connect/inventory/locations' },
  listInventoryBalances: { method: 'get', path: '/api/v1/connect/inventory/balances' },
  getIntegrationHealth: { method: 'get', path: '/api/v1/integration/health' },
  pushInboundTarget: { method: 'post', path: '/api/v1/inbound/targets', body: { sourceSystem: 'auth', ...target } },
  pushInboundTargetBatch: {
    method: 'post',
    path: '/api/v1/inbound/targets/batch',
    body: { sourceSystem: 'auth', targets: [target] },
  },
  listImportJobs: { method: 'get', path: '/api/v1/import-jobs' },
  // 200 needs a job of the caller's own.
  getImportJob: { method: 'get', path: async (c) => `/api/v1/import-jobs/${await insertImportJob(suite.pool, c)}` },
  // One work order and one event id: repeated calls are replays (200, nothing booked twice).
  listWorkOrderMaterialUsages: {
    method: 'get',
    path: async () => `/api/v1/connect/work-orders/${suite.demo.workOrders[0]!.workOrderId}/materials`,
  },
  recordWorkOrderMaterialUsage: {
    method: 'post',
    path: async () => `/api/v1/connect/work-orders/${suite.demo.workOrders[0]!.workOrderId}/materials`,
    body: materialUsage,
  },
  recordWorkOrderMaterialUsageByExternalId: {
    method: 'post',
    path: async () =>
      `/api/v1/connect/work-orders/by-external-id/${encodeURIComponent(suite.demo.workOrders[0]!.externalWorkOrderId)}/materials`,
    body: materialUsage,
  },
  createJob: { method: 'post', path: '/api/v1/connect/jobs', body: jobBody },
  createImportJobRouteSuggestion: {
    method: 'post',
    path: async (c) => `/api/v1/import-jobs/${await insertFinishedImportJob(suite.pool, c)}/route-suggestion`,
    body: {
      date: '2026-11-23',
      depot: { latitude: 52.5, longitude: 13.4 },
      vehicles: 1,
      shift: { start: '07:00', end: '19:00' },
    },
  },
  getRouteSuggestion: {
    method: 'get',
    path: async (c) => `/api/v1/route-suggestions/${await insertRouteSuggestion(suite.pool, c)}`,
  },
  createJobUnversioned: { method: 'post', path: '/api/connect/jobs', body: jobBody },
  listEvents: { method: 'get', path: '/api/v1/events' },
  createWebhookEndpoint: {
    method: 'post',
    path: '/api/v1/webhook-endpoints',
    body: { url: publicHook, events: ['all'] },
  },
  listWebhookEndpoints: { method: 'get', path: '/api/v1/webhook-endpoints' },
  getWebhookEndpoint: { method: 'get', path: endpointPath('') },
  updateWebhookEndpoint: { method: 'patch', path: endpointPath(''), body: { events: ['field_job.created'] } },
  deleteWebhookEndpoint: { method: 'delete', path: endpointPath('') },
  disableWebhookEndpoint: { method: 'post', path: endpointPath('/disable') },
  enableWebhookEndpoint: { method: 'post', path: endpointPath('/enable') },
  rotateWebhookSecret: { method: 'post', path: endpointPath('/rotate-secret'), body: {} },
  sendWebhookTestEvent: { method: 'post', path: endpointPath('/test') },
  listWebhookAttempts: { method: 'get', path: endpointPath('/attempts') },
  replayWebhookEvent: { method: 'post', path: endpointPath('/replay'), body: () => ({ eventId: lastTestEventId }) },
  replayFailedWebhookEvents: {
    method: 'post',
    path: endpointPath('/replay-failed'),
    body: { since: '2026-01-01T00:00:00Z' },
  },
};

const suite = useGatewaySuite({
  env: () => ({ AUTH_CACHE_TTL_MS: '300', WEBHOOK_ENDPOINTS_PER_CLIENT: '1000', AUTH_FAILURES_PER_MINUTE: '1000' }),
});
const keys: Record<string, string> = {};

beforeAll(async () => {
  const revoked = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all');
  await revokeKey(suite.pool, revoked.keyId);
  keys.revoked = revoked.apiKey;
  const expired = await createClientWithKey(suite.pool, suite.demo.tenantId, 'all', [
    '--expires-at',
    '2020-01-01T00:00:00Z',
  ]);
  keys.expired = expired.apiKey;
});

const bodyOf = (req: ValidRequest) => (typeof req.body === 'function' ? (req.body as () => unknown)() : req.body);

const pathOf = (req: ValidRequest, caller: { clientId: string }) =>
  typeof req.path === 'string' ? req.path : req.path({ clientId: caller.clientId, tenantId: suite.demo.tenantId });

const operations = () =>
  Object.entries(suite.api.doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, op]) => op.security?.some((s) => s.apiKey))
      .map(([method, op]) => ({ method, path, operationId: op.operationId, scope: op.security![0]!.apiKey![0]! })),
  );

describe('authentication and scopes on every integration operation', () => {
  it('has a valid request for every documented integration operation, with the scope of the route table', () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(0);
    for (const op of ops) {
      expect(validRequests[op.operationId], `validRequests lacks ${op.operationId}`).toBeDefined();
      expect(routeScopes[`${op.method.toUpperCase()} ${op.path}`]).toBe(op.scope);
    }
  });

  const cases: [name: string, headers: () => Record<string, string>, code: string][] = [
    ['no credential', () => ({}), 'missing_credential'],
    [
      'a non-bearer scheme',
      () => ({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }),
      'malformed_credential',
    ],
    ['a malformed key', () => bearer('not-a-key'), 'malformed_credential'],
    ['an unknown key', () => bearer(generateApiKey().key), 'invalid_credential'],
    ['a revoked key', () => bearer(keys.revoked!), 'revoked_credential'],
    ['an expired key', () => bearer(keys.expired!), 'expired_credential'],
  ];

  for (const [name, headers, code] of cases) {
    it(`answers 401 ${code} to ${name}`, async () => {
      for (const op of operations()) {
        const req = validRequests[op.operationId]!;
        const path = await pathOf(req, suite.demo.clients.all!);
        const res = await suite.api.request(req.method, path, { headers: headers(), body: bodyOf(req) });
        expect(res.status, `${op.operationId}`).toBe(401);
        expect(res.body.error.code).toBe(code);
        expect(res.body.error.correlationId).toBe(res.headers.get('x-correlation-id'));
      }
    });
  }

  it('answers 403 to a valid key without the scope, and 2xx with exactly that scope', async () => {
    const call = async (req: ValidRequest, label: string) => {
      const caller = { ...suite.demo.clients[label]!, tenantId: suite.demo.tenantId };
      return suite.api.request(req.method, await pathOf(req, caller), {
        headers: bearer(caller.apiKey),
        body: bodyOf(req),
      });
    };
    for (const op of operations()) {
      const req = validRequests[op.operationId]!;
      const none = await suite.api.request(req.method, await pathOf(req, suite.demo.clients.none!), {
        headers: bearer(suite.demo.clients.none!.apiKey),
        body: bodyOf(req),
      });
      expect(none.status, op.operationId).toBe(403);
      expect(none.body.error.code).toBe('insufficient_scope');
      const otherScope = Object.keys(suite.demo.clients).find((s) => s !== op.scope && s !== 'all' && s !== 'none')!;
      const other = await call(req, otherScope);
      expect(other.status, `${op.operationId} with ${otherScope}`).toBe(403);
      expect([200, 201, 202, 204], op.operationId).toContain((await call(req, op.scope)).status);
      expect([200, 201, 202, 204], op.operationId).toContain((await call(req, 'all')).status);
    }
  });

  it('stops accepting a revoked key within the cache TTL', async () => {
    const c = await createClientWithKey(suite.pool, suite.demo.tenantId, 'connect.inventory.read');
    const path = '/api/v1/connect/inventory/items';
    expect((await suite.api.get(path, { headers: bearer(c.apiKey) })).status).toBe(200);
    await revokeKey(suite.pool, c.keyId);
    await new Promise((r) => setTimeout(r, 400)); // AUTH_CACHE_TTL_MS=300 in this gateway
    const after = await suite.api.get(path, { headers: bearer(c.apiKey) });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('revoked_credential');
  });

  it('never logs the Authorization header or the key', async () => {
    const key = suite.demo.clients.all!.apiKey;
    await suite.api.get('/api/v1/connect/inventory/items', { headers: bearer(key) });
    const lines = suite.gateway.logLines();
    const text = JSON.stringify(lines);
    expect(text).not.toContain(key);
    expect(text.toLowerCase()).not.toContain('bearer ');
    const line = lines.filter((l) => l.route === '/api/v1/connect/inventory/items' && l.status === 200).at(-1)!;
    expect(line).toMatchObject({ clientId: suite.demo.clients.all!.clientId, method: 'GET' });
    expect(Object.keys(line)).toEqual(
      expect.arrayContaining(['requestId', 'correlationId', 'clientId', 'route', 'status', 'durationMs']),
    );
  });
});
