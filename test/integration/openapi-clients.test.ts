import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../support/time-scale.js';

// What an integrator does with our document: print it (`npm run --silent openapi`), lint it with
// Redocly's recommended rules (redocly.yaml), generate TypeScript types with openapi-typescript
// and compile a client against them.
const run = promisify(execFile);
const repo = new URL('../..', import.meta.url).pathname;
const bin = (name: string) => join(repo, 'node_modules/.bin', name);
const quietEnv = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
let dir: string;
let documentPath: string;
let document: {
  servers?: unknown[];
  tags: { name: string; description?: string }[];
  paths: Record<string, Record<string, { responses: Record<string, unknown>; description?: string; summary?: string }>>;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openapi-clients-'));
  documentPath = join(dir, 'openapi.json');
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/gateway/openapi/print-document.ts'], {
    cwd: repo,
    maxBuffer: 64 * 1024 * 1024,
  });
  await writeFile(documentPath, stdout);
  document = JSON.parse(stdout);
}, scaled(60_000));

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the OpenAPI document as integrators use it', () => {
  it(
    'lints clean with Redocly’s recommended rules',
    async () => {
      const { stdout } = await run(
        bin('redocly'),
        ['lint', documentPath, '--config', join(repo, 'redocly.yaml'), '--format=json'],
        { cwd: repo, env: quietEnv, maxBuffer: 64 * 1024 * 1024 },
      ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
      const report = JSON.parse(stdout) as { totals: Record<string, number>; problems: { message: string }[] };
      expect(report.problems.map((p) => p.message)).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    },
    scaled(120_000),
  );

  it('has servers, a description on every tag and a 4xx on every operation that takes input or credentials', () => {
    expect(document.servers?.length).toBeGreaterThan(0);
    expect(document.tags.filter((t) => !t.description).map((t) => t.name)).toEqual([]);
    const without4xx = Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => !Object.keys(op.responses).some((s) => s.startsWith('4')))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    // The exception redocly.yaml names: no credentials, no input, so no 4xx.
    expect(without4xx.sort()).toEqual([
      'GET /connect/v1/.well-known/jwks.json',
      'GET /livez',
      'GET /metrics',
      'GET /openapi.json',
      'GET /readyz',
    ]);
  });

  it(
    'generates TypeScript types (openapi-typescript) that a client compiles against',
    async () => {
      // A .ts (not .d.ts) output, so the compiler checks it while skipping the standard library.
      await run(bin('openapi-typescript'), [documentPath, '-o', join(dir, 'schema.ts')], {
        cwd: repo,
        env: quietEnv,
      });
      await writeFile(
        join(dir, 'client.ts'),
        `import type { components, paths } from './schema.js';
type ApiError = components['schemas']['ApiErrorResponse'];
type Batch = paths['/api/v1/inbound/targets/batch']['post'];
type BatchBody = NonNullable<Batch['requestBody']>['content']['application/json'];
type Accepted = Batch['responses'][200]['content']['application/json'];

export const body: BatchBody = {
  sourceSystem: 'erp',
  targets: [{ externalId: 'a-1', name: 'Site', coordinates: { latitude: 52.5, longitude: 13.4 } }],
};
export const code: ApiError['error']['code'] = 'rate_limited';
export const details: ApiError['error']['details'] = { retryAfterSeconds: 5 };
export function importJobIdOf(accepted: Accepted): number {
  return accepted.importJobId;
}
`,
      );
      const tsc = await run(
        bin('tsc'),
        [
          '--noEmit',
          '--strict',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--skipLibCheck',
          join(dir, 'client.ts'),
        ],
        { cwd: dir },
      ).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout}${err.stderr}` }));
      expect(tsc.stdout).toBe('');
      expect((await readFile(join(dir, 'schema.ts'), 'utf8')).length).toBeGreaterThan(10_000);
    },
    scaled(120_000),
  );
});
