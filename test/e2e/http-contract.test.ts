import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineRoute } from '../../src/gateway/routes/route-definition.js';
import { bearer } from '../support/fixtures.js';
import { useGatewaySuite } from '../support/suite.js';

// Probe operations mounted only in this test, through the same pipeline and document as
// the real ones, to exercise body handling before the feature issues add real POST routes.
const echoBody = z
  .strictObject({ name: z.string().max(5), count: z.number().int().optional() })
  .meta({ id: 'ProbeEcho' });
const probeRoutes = [
  defineRoute({
    method: 'post',
    path: '/probe/echo',
    operationId: 'probeEcho',
    summary: 'Echo (test only)',
    tag: 'Probe',
    auth: 'none',
    body: echoBody,
    connectErrorStatuses: [400],
    responses: { 200: { description: 'The body', schema: echoBody } },
    handler: async ({ body }) => ({ status: 200, body }),
  }),
  defineRoute({
    method: 'get',
    path: '/probe/boom',
    operationId: 'probeBoom',
    summary: 'Fails (test only)',
    tag: 'Probe',
    auth: 'none',
    responses: { 200: { description: 'never' } },
    handler: async () => {
      throw new Error('secret internal detail');
    },
  }),
];

const suite = useGatewaySuite({ env: () => ({ BODY_LIMIT_BYTES: '2048' }), extraRoutes: probeRoutes });

describe('request media types', () => {
  it.each(['application/json', 'text/json', 'application/vnd.example+json', 'application/json; charset=utf-8'])(
    'accepts %s',
    async (type) => {
      const res = await suite.api.post('/probe/echo', { headers: { 'content-type': type }, rawBody: '{"name":"abc"}' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ name: 'abc' });
    },
  );

  it.each(['text/plain', 'application/xml', 'application/x-www-form-urlencoded'])('answers 415 to %s', async (type) => {
    const res = await suite.api.post('/probe/echo', { headers: { 'content-type': type }, rawBody: '{"name":"abc"}' });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
    expect(res.body.error.fieldErrors).toBeNull();
  });

  it('answers 400 invalid_json to malformed JSON, in the standard shape', async () => {
    const res = await suite.api.post('/probe/echo', {
      headers: { 'content-type': 'application/json' },
      rawBody: '{"name":',
    });
    expect(res.status).toBe(400);
    // connectErrorStatuses lists 400 for this probe: the Connect shape is chosen by the route table.
    expect(res.body.error.code).toBe('invalid_json');
    expect(res.body.error.requestId).toBe(res.headers.get('x-request-id'));
  });

  it('refuses the NUL character, which PostgreSQL cannot store, with 400', async () => {
    const res = await suite.api.post('/probe/echo', { body: { name: 'a\u0000b' } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const escaped = await suite.api.post('/probe/echo', { body: { name: 'a\\u0000' } }); // a backslash, then text
    expect(escaped.status).toBe(400); // too long for the probe schema (max 5): it was parsed, not refused as NUL
    expect(escaped.body.error.details[0].field).toBe('name');
  });

  it('answers 413 past the body limit', async () => {
    const res = await suite.api.post('/probe/echo', { body: { name: 'x'.repeat(4000) } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('reports each invalid and unknown field', async () => {
    const res = await suite.api.post('/probe/echo', { body: { name: 'toolong', count: 1.5, extra: true } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['count', 'extra', 'name']);
  });
});

describe('response media types', () => {
  const path = '/api/v1/connect/inventory/items';
  it.each([
    [undefined, 'application/json'],
    ['*/*', 'application/json'],
    ['application/json', 'application/json'],
    ['text/json', 'text/json'],
    ['text/plain', 'text/plain'],
    ['application/xml', 'application/json'],
  ])('Accept %s → %s with the same JSON', async (accept, expected) => {
    const headers: Record<string, string> = { ...bearer(suite.demo.clients.all!.apiKey) };
    if (accept) headers.accept = accept;
    const res = await suite.api.get(path, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(`${expected}; charset=utf-8`);
    expect(Array.isArray(JSON.parse(res.text))).toBe(true);
  });

  it('honours Accept on errors too', async () => {
    const res = await suite.api.get(path, { headers: { accept: 'text/plain' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
  });
});

describe('errors and ids', () => {
  it('answers an unknown route with 404 route_not_found in the standard shape', async () => {
    const res = await suite.api.get('/api/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('route_not_found');
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await suite.api.request('delete', '/api/v1/connect/inventory/items');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('GET');
    expect(res.body.error.code).toBe('method_not_allowed');
  });

  it('answers an unexpected exception with 500, no internals, logged with the request id', async () => {
    const res = await suite.api.get('/probe/boom');
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('internal_error');
    expect(res.text).not.toContain('secret internal detail');
    expect(res.text).not.toMatch(/at .*\.ts:\d+/);
    const requestId = res.headers.get('x-request-id');
    const logged = suite.gateway.logLines().find((l) => l.requestId === requestId && l.msg === 'unhandled error');
    expect(logged).toBeDefined();
    expect(JSON.stringify(logged)).toContain('secret internal detail');
  });

  it('keeps a client correlation id and generates one when absent or unusable', async () => {
    const kept = await suite.api.get('/livez', { headers: { 'x-correlation-id': 'erp-42.retry:1' } });
    expect(kept.headers.get('x-correlation-id')).toBe('erp-42.retry:1');
    const made = await suite.api.get('/livez');
    expect(made.headers.get('x-correlation-id')).toMatch(/^[0-9a-f-]{36}$/);
    const bad = await suite.api.get('/livez', { headers: { 'x-correlation-id': 'x'.repeat(300) } });
    expect(bad.headers.get('x-correlation-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(made.headers.get('x-request-id')).not.toBe(bad.headers.get('x-request-id'));
  });

  it('puts the correlation id into error bodies and log lines', async () => {
    const res = await suite.api.get('/api/v1/connect/inventory/items', { headers: { 'x-correlation-id': 'corr-abc' } });
    expect(res.body.error.correlationId).toBe('corr-abc');
    expect(suite.gateway.logLines().some((l) => l.correlationId === 'corr-abc' && l.status === 401)).toBe(true);
  });
});
