import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offlineDocument, offlineRoutes } from '../../src/gateway/openapi/offline-routes.js';
import { operationExamples } from '../../src/gateway/openapi/examples/operations.js';
import { connectErrorSchema, standardErrorSchema } from '../../src/gateway/http/error-shapes.js';
import type { RouteDefinition } from '../../src/gateway/routes/route-definition.js';
import { webhookEnvelopeSchema, webhookEventTypes } from '../../src/shared/webhooks/event-types.js';
import { webhookExample } from '../../src/shared/webhooks/examples.js';

// Every body in the OpenAPI document has an example, and each example is one the service itself
// would take or give: parsed with the route's own zod schema (refinements included, which the
// JSON Schema in the document cannot express). Redocly's lint checks them against the document.

type MediaType = { example?: unknown; examples?: Record<string, { $ref?: string; value?: unknown }> };
type Operation = {
  operationId: string;
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { content?: Record<string, MediaType> }>;
};
type Document = {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: { examples: Record<string, { value: unknown }> };
};

let routes: RouteDefinition[];
let document: Document;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ routes, close } = offlineRoutes());
  document = (await offlineDocument(routes)) as Document;
});
afterAll(async () => close?.());

const operations = (section: Record<string, Record<string, Operation>>) =>
  Object.entries(section).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));

function exampleOf(media: MediaType, document: Document): unknown {
  if (media.example !== undefined) return media.example;
  const ref = Object.values(media.examples ?? {})[0]?.$ref;
  return ref ? document.components.examples[ref.split('/').pop()!]?.value : undefined;
}

describe('examples in the OpenAPI document', () => {
  it('are given for every request and response body, on every media type', () => {
    const missing: string[] = [];
    for (const { path, method, op } of [...operations(document.paths), ...operations(document.webhooks)]) {
      const bodies = [
        ['request', op.requestBody?.content],
        ...Object.entries(op.responses).map(([status, r]) => [status, r.content] as const),
      ] as const;
      for (const [what, content] of bodies) {
        for (const [mediaType, media] of Object.entries(content ?? {})) {
          if (exampleOf(media, document) === undefined) missing.push(`${method} ${path} ${what} ${mediaType}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('are bodies the route schemas accept, request and success answers alike', () => {
    const refused: string[] = [];
    const check = (
      where: string,
      schema: { safeParse(v: unknown): { success: boolean; error?: unknown } },
      v: unknown,
    ) => {
      const result = schema.safeParse(v);
      if (!result.success) refused.push(`${where}: ${String(result.error)}`);
    };
    for (const route of routes) {
      const examples = operationExamples[route.operationId];
      if (!examples) {
        refused.push(`${route.operationId}: no examples`);
        continue;
      }
      if (route.body) check(`${route.operationId} request`, route.body, examples.request);
      for (const [status, doc] of Object.entries(route.responses)) {
        if (doc.schema) check(`${route.operationId} ${status}`, doc.schema, examples.responses[Number(status)]);
      }
    }
    expect(refused).toEqual([]);
  });

  it('show error bodies in the shape each operation answers, one per status', () => {
    for (const [name, { value }] of Object.entries(document.components.examples)) {
      const schema = name.startsWith('connect') ? connectErrorSchema : standardErrorSchema;
      expect(schema.safeParse(value).success, name).toBe(true);
      expect(name).toMatch(/^(standard|connect)(AccessToken)?Error\d{3}$/);
    }
    const appointment401 =
      document.paths['/connect/v1/appointment-requests']!.post!.responses['401']!.content!['application/json']!;
    expect(exampleOf(appointment401, document)).toMatchObject({ error: { code: 'expired_token' } });
    const jobs400 = document.paths['/api/v1/connect/jobs']!.post!.responses['400']!.content!['application/json']!;
    expect(exampleOf(jobs400, document)).toMatchObject({
      error: { code: 'validation_failed', requestId: expect.any(String) },
    });
    const inbound429 = document.paths['/api/v1/inbound/targets']!.post!.responses['429']!.content!['application/json']!;
    expect(exampleOf(inbound429, document)).toMatchObject({
      error: { code: 'rate_limited', details: { retryAfterSeconds: expect.any(Number) } },
    });
  });

  it('give each webhook event a body its envelope schema accepts', () => {
    for (const type of webhookEventTypes) {
      expect(webhookEnvelopeSchema(type).safeParse(webhookExample(type)).error, type).toBeUndefined();
    }
  });
});
