import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { defineRoute, type RouteDefinition } from '../routes/route-definition.js';

export const docsPath = '/docs';
export const rendererPath = '/docs/redoc.standalone.js';

/**
 * The page's Content-Security-Policy: scripts only from this gateway, requests only to it, nothing
 * framed or posted. Redoc's styled-components injects <style> elements ('unsafe-inline' styles;
 * inline scripts stay refused) and its search index runs in a Worker made from a blob: URL.
 */
export const docsContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// The renderer reads the spec from <redoc spec-url> itself (no inline script, which the CSP refuses).
const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Connect Integration Service: API reference</title>
</head>
<body>
<redoc spec-url="/openapi.json" hide-hostname="true"></redoc>
<script src="${rendererPath}"></script>
</body>
</html>
`;

const shared = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' };

/** The human-readable API reference: Redoc's standalone bundle (from node_modules) renders /openapi.json. */
export function docsRoutes(): RouteDefinition[] {
  let renderer: Promise<string> | undefined;
  const bundle = () =>
    (renderer ??= readFile(createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js'), 'utf8'));
  return [
    defineRoute({
      method: 'get',
      path: docsPath,
      operationId: 'getApiReference',
      summary: 'API reference (HTML)',
      description:
        'This document rendered for people (Redoc), in a browser: operations, schemas, examples, search. Served with ' +
        'its renderer by this gateway: no CDN, no network beyond this gateway, no credentials.',
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'An HTML page', schema: z.string() } },
      responseMediaTypes: ['text/html'],
      handler: async () => ({
        status: 200,
        body: page,
        headers: {
          ...shared,
          'Content-Type': 'text/html; charset=utf-8',
          'Content-Security-Policy': docsContentSecurityPolicy,
          'Cache-Control': 'no-cache',
        },
      }),
    }),
    defineRoute({
      method: 'get',
      path: rendererPath,
      operationId: 'getApiReferenceRenderer',
      summary: 'The script that renders /docs',
      description: "Redoc's standalone bundle (about 1.1 MB), as the npm package redoc ships it.",
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'JavaScript', schema: z.string() } },
      responseMediaTypes: ['text/javascript'],
      handler: async () => ({
        status: 200,
        body: await bundle(),
        headers: { ...shared, 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'max-age=3600' },
      }),
    }),
  ];
}
