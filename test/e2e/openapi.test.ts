import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeScopes } from '../../src/gateway/auth/route-scopes.js';
import { errorCatalogue } from '../../src/shared/errors.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';

let db: TestDatabase;
let gateway: TestGateway;
let doc: any;

beforeAll(async () => {
  db = await createTestDatabase();
  gateway = await startTestGateway(testConfig(db.url));
  const res = await fetch(`${gateway.url}/openapi.json`); // served without a key
  expect(res.status).toBe(200);
  doc = await res.json();
});

afterAll(async () => {
  await gateway?.stop();
  await db?.drop();
});

describe('the served OpenAPI document', () => {
  it('is served as application/json, the same text every time', async () => {
    const [a, b] = await Promise.all([0, 1].map(() => fetch(`${gateway.url}/openapi.json`)));
    expect(a!.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const [textA, textB] = await Promise.all([a!.text(), b!.text()]);
    expect(textA).toBe(textB);
    expect(JSON.parse(textA)).toEqual(doc);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('documents every integration operation of the route-scope table that is built, with its scope', () => {
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        const scope = routeScopes[`${method.toUpperCase()} ${path}`];
        if (path.startsWith('/api/')) {
          expect(op.security, `${method} ${path}`).toEqual([{ apiKey: [scope] }]);
          for (const status of ['401', '403', '429'])
            expect(op.responses[status], `${status} on ${path}`).toBeDefined();
          const success = Object.keys(op.responses).find((s) => s.startsWith('2'))!;
          expect(op.responses[success].headers).toHaveProperty('RateLimit');
        } else if (scope) {
          // /connect/v1 operations: OAuth2 access tokens (the token endpoint and JWKS need none).
          expect(op.security, `${method} ${path}`).toEqual([{ oauth2: [scope] }]);
          for (const status of ['401', '403', '429'])
            expect(op.responses[status], `${status} on ${path}`).toBeDefined();
        } else {
          expect(op.security).toEqual([]);
        }
        expect(op.responses['500']).toBeDefined();
      }
    }
    for (const path of ['/livez', '/readyz', '/metrics', '/openapi.json', '/docs', '/api/v1/integration/health']) {
      expect(doc.paths[path]?.get, path).toBeDefined();
    }
  });

  it('carries both error shapes, the code catalogue and the limits', () => {
    expect(doc.components.schemas.ApiErrorResponse.properties.error.required.sort()).toEqual([
      'code',
      'correlationId',
      'details',
      'fieldErrors',
      'message',
    ]);
    expect(doc.components.schemas.ConnectApiErrorResponse.properties.error.required.sort()).toEqual([
      'code',
      'correlationId',
      'details',
      'message',
      'requestId',
    ]);
    expect(doc.components.schemas.ErrorCode.enum.sort()).toEqual(Object.keys(errorCatalogue).sort());
    for (const code of Object.keys(errorCatalogue)) expect(doc.info.description).toContain(`\`${code}\``);
    expect(doc.info.description).toContain('600 requests per 60 s');
    expect(doc.info.description).toMatch(/at most \d+ bytes/);
  });

  it('gives inventory DTOs exactly the fields of spec part 2, closed', () => {
    const item = doc.components.schemas.ConnectInventoryItemDto;
    expect(item.additionalProperties).toBe(false);
    expect(Object.keys(item.properties).sort()).toEqual([
      'categoryName',
      'defaultQuantity',
      'inventoryItemId',
      'lowStockThreshold',
      'name',
      'sku',
      'trackStock',
      'unitOfMeasure',
    ]);
    expect(doc.components.schemas.InventoryLocationType.enum).toEqual([
      'Warehouse',
      'Vehicle',
      'Technician',
      'CustomerSite',
      'Transit',
    ]);
  });
});
