import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docsContentSecurityPolicy } from '../../src/gateway/docs/routes.js';
import { systemChromium } from '../support/chromium.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startTestGateway, testConfig, type TestGateway } from '../support/gateway.js';
import { scaled } from '../support/time-scale.js';

// Installs chromium when missing (as root, with apt-get); otherwise the file is skipped and says why.
const chromium = await systemChromium();
const skip = 'skip' in chromium ? chromium.skip : null;
if (skip) console.warn(`docs-page.test.ts skipped: ${skip}`);

type Operation = { method: string; path: string; summary: string };

let db: TestDatabase;
let gateway: TestGateway;
let browser: Browser;
let operations: Operation[];

beforeAll(async () => {
  if (skip) return;
  db = await createTestDatabase();
  gateway = await startTestGateway(testConfig(db.url));
  const doc = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { summary: string }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method, path, summary: op.summary })),
  );
  // Root in a container needs --no-sandbox; the browser has no profile of its own beyond this run.
  browser = await puppeteer.launch({
    executablePath: (chromium as { path: string }).path,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  });
});

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await db?.drop();
});

describe.skipIf(skip !== null)(
  `the API reference at /docs in headless chromium${skip ? ` (skipped: ${skip})` : ''}`,
  () => {
    it('is served without a credential under a strict Content-Security-Policy, its renderer from the gateway', async () => {
      const res = await fetch(`${gateway.url}/docs`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = res.headers.get('content-security-policy');
      expect(csp).toBe(docsContentSecurityPolicy);
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/script-src[^;]*unsafe/);
      const html = await res.text();
      const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
      expect(scripts).toEqual([' src="/docs/redoc.standalone.js"']); // one script, none inline
      const js = await fetch(`${gateway.url}/docs/redoc.standalone.js`);
      expect(js.status).toBe(200);
      expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect((await js.text()).length).toBeGreaterThan(100_000);
    });

    it('renders every operation of /openapi.json, with no request outside the gateway and the CSP refusing nothing of the page', async () => {
      const page = await browser.newPage();
      const requested: string[] = [];
      const refused: string[] = [];
      const pageErrors: string[] = [];
      const blocked: string[] = [];
      page.on('request', (req) => requested.push(req.url()));
      page.on('requestfailed', (req) => blocked.push(`${req.url()} ${req.failure()?.errorText}`));
      page.on('pageerror', (err) => pageErrors.push(String(err)));
      page.on('console', (msg) => {
        if (/Content Security Policy/i.test(msg.text())) refused.push(msg.text());
      });
      // Runs in the page (through DevTools, so the CSP does not apply to it): records what the CSP refuses.
      await page.evaluateOnNewDocument(
        `window.refused = []; document.addEventListener('securitypolicyviolation', (e) => window.refused.push(e.violatedDirective + ' ' + e.blockedURI));`,
      );
      const res = await page.goto(`${gateway.url}/docs`, { waitUntil: 'load', timeout: scaled(30_000) });
      expect(res?.status()).toBe(200);
      // Redoc fetches the document after load and renders it: wait until the last operation shows.
      const last = operations.at(-1)!.summary;
      await page.waitForFunction(`document.body.innerText.includes(${JSON.stringify(last)})`, {
        timeout: scaled(60_000),
      });
      const text = (await page.evaluate('document.body.innerText')) as string;
      const missing = operations.filter((op) => !text.includes(op.summary));
      expect(missing).toEqual([]);
      expect(operations.length).toBeGreaterThan(20);
      expect(text).toContain('Connect Integration Service');
      // Each operation's method and path appear in its section (Redoc renders them as text).
      const html = await page.content();
      for (const op of operations) expect(html, `${op.method} ${op.path}`).toContain(op.path);

      // What left the browser: every request but those the CSP stopped before the network.
      const sent = requested.filter((url) => !blocked.includes(`${url} csp`));
      const outside = sent.filter((url) => !url.startsWith(`${gateway.url}/`) && !/^(data|blob):/.test(url));
      expect(outside).toEqual([]);
      expect(sent).toContain(`${gateway.url}/openapi.json`);
      expect(sent).toContain(`${gateway.url}/docs/redoc.standalone.js`);
      // The CSP refused only what lies outside the gateway (Redoc's sidebar logo on cdn.redoc.ly):
      // nothing of the page itself, no inline script, no eval.
      const violations = (await page.evaluate('window.refused')) as string[];
      expect(violations.length).toBe(refused.length);
      for (const v of violations) expect(v).toMatch(/^img-src https:\/\//);
      expect(pageErrors).toEqual([]);
      await page.close();
    });
  },
);
