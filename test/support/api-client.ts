import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';

type OpenApiOperation = {
  operationId: string;
  security?: { apiKey?: string[] }[];
  responses: Record<string, { content?: Record<string, unknown> }>;
};
type OpenApiDoc = { paths: Record<string, Record<string, OpenApiOperation>> };

export type ApiResponse = {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body (JSON responses), else undefined. */
  body: any;
};

export type RequestOptions = { headers?: Record<string, string>; body?: unknown; rawBody?: string | Buffer };

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * An HTTP client for tests that checks every response against the served OpenAPI document:
 * the status must be documented for the operation, the media type offered, the body valid.
 */
export async function createApiClient(baseUrl: string, defaultHeaders: Record<string, string> = {}) {
  const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as OpenApiDoc;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema(doc as object, 'openapi');
  const templates = Object.keys(doc.paths).map((t) => ({
    template: t,
    regex: new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));

  function check(method: string, path: string, res: ApiResponse) {
    const pathOnly = path.split('?')[0]!;
    const template = templates.find((t) => t.regex.test(pathOnly) && doc.paths[t.template]![method]);
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    let ref: string;
    if (!template) {
      // Unknown route or method: the standard error shape.
      expect([404, 405], `${method.toUpperCase()} ${path} is not in the OpenAPI document`).toContain(res.status);
      ref = 'openapi#/components/schemas/ApiErrorResponse';
    } else {
      const op = doc.paths[template.template]![method]!;
      const response = op.responses[String(res.status)];
      expect(
        response,
        `${res.status} is not documented for ${method.toUpperCase()} ${template.template}`,
      ).toBeDefined();
      if (!response!.content) return;
      expect(Object.keys(response!.content), `media type of ${method.toUpperCase()} ${path}`).toContain(mediaType);
      ref = `openapi#/${pointer('paths', template.template, method, 'responses', String(res.status), 'content', mediaType, 'schema')}`;
    }
    // Answers that are not JSON text (Prometheus text, the /docs page and its script, the uploader and its
    // checksum): their documented media type is checked above.
    if (template && !/[/+]json$/.test(mediaType)) return;
    const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
    const body = res.body ?? JSON.parse(res.text);
    const valid = validate(body);
    expect(
      validate.errors ?? [],
      `body of ${res.status} ${method.toUpperCase()} ${path}: ${res.text.slice(0, 500)}`,
    ).toEqual([]);
    expect(valid).toBe(true);
  }

  async function request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...defaultHeaders, ...options.headers };
    let body: string | Buffer | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${baseUrl}${path}`, { method: method.toUpperCase(), headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const out: ApiResponse = { status: res.status, headers: res.headers, text, body: parsed };
    check(method.toLowerCase(), path, out);
    return out;
  }

  return {
    doc,
    request,
    get: (path: string, options?: RequestOptions) => request('get', path, options),
    post: (path: string, options?: RequestOptions) => request('post', path, options),
  };
}

export type ApiClient = Awaited<ReturnType<typeof createApiClient>>;

/**
 * Sends until the answer is not a refusal to be retried (429, or 503 with `Retry-After`: the
 * shares, the rate limit, a dependency away), waiting `Retry-After` seconds between, as the API
 * guide tells clients to; gives up at the deadline. Returns the last answer. For tests whose
 * subject is not the refusal (crash safety under load on a busy machine). With `only503`, a 429
 * is an answer like any other (for tests that count them).
 */
export async function untilNotRefused(
  send: () => Promise<ApiResponse>,
  deadlineMs: number,
  options: { only503?: boolean } = {},
): Promise<ApiResponse> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await send();
    const retryAfter = Number(res.headers.get('retry-after'));
    const refused = (res.status === 429 && !options.only503) || (res.status === 503 && retryAfter > 0);
    if (!refused || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, Math.max(retryAfter, 0.1) * 1000));
  }
}
