import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../support/time-scale.js';

// What an integrator does with our document: print it (`npm run --silent openapi`), lint it with
// Redocly's recommended rules (redocly.yaml), generate TypeScript types with openapi-typescript
// and compile a client against them, and generate a typescript-fetch client with openapi-generator
// (from Maven Central, when Java and Maven are present) and compile it.
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

  it('has servers, a description on every tag and operation, and a 4xx on every operation that takes input or credentials', () => {
    expect(document.servers?.length).toBeGreaterThan(0);
    expect(document.tags.filter((t) => !t.description).map((t) => t.name)).toEqual([]);
    const withoutDescription = Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => !op.description)
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(withoutDescription).toEqual([]);
    const without4xx = Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => !Object.keys(op.responses).some((s) => s.startsWith('4')))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    // The exception redocly.yaml names: no credentials, no input, so no 4xx.
    expect(without4xx.sort()).toEqual([
      'GET /connect/v1/.well-known/jwks.json',
      'GET /docs',
      'GET /docs/redoc.standalone.js',
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
      expect(
        await typeErrors(dir, ['--module', 'nodenext', '--moduleResolution', 'nodenext', join(dir, 'client.ts')]),
      ).toBe('');
      expect((await readFile(join(dir, 'schema.ts'), 'utf8')).length).toBeGreaterThan(10_000);
    },
    scaled(120_000),
  );

  it.skipIf(!onPath('java') || !onPath('mvn'))(
    'generates a typescript-fetch client with openapi-generator that compiles',
    async () => {
      const jar = await openApiGeneratorJar();
      const out = join(dir, 'typescript-fetch');
      // Without --skip-validate-spec: the generator's own validation of the document must pass too.
      await run('java', ['-jar', jar, 'generate', '-g', 'typescript-fetch', '-i', documentPath, '-o', out], {
        cwd: dir,
        maxBuffer: 64 * 1024 * 1024,
      });
      await writeFile(
        join(out, 'use.ts'),
        `import { Configuration, InboundTargetsApi, ImportJobsApi, type InboundTargetBatchDto } from './index';
const config = new Configuration({ basePath: 'http://127.0.0.1:3000', accessToken: async () => 'cis_…' });
const batch: InboundTargetBatchDto = {
  sourceSystem: 'erp',
  targets: [{ externalId: 'a-1', name: 'Site', coordinates: { latitude: 52.5, longitude: 13.4 } }],
};
export async function push(): Promise<string> {
  const accepted = await new InboundTargetsApi(config).pushInboundTargetBatch({ inboundTargetBatchDto: batch });
  const job = await new ImportJobsApi(config).getImportJob({ id: accepted.importJobId });
  return job.status;
}
`,
      );
      const args = ['--module', 'es2022', '--moduleResolution', 'bundler', '--lib', 'es2022,dom'];
      expect(await typeErrors(out, [...args, join(out, 'index.ts'), join(out, 'use.ts')])).toBe('');
    },
    scaled(300_000),
  );
});

/** What tsc reports on strictly checking these files ('' when they compile). */
async function typeErrors(cwd: string, args: string[]): Promise<string> {
  const common = ['--noEmit', '--strict', '--target', 'es2022', '--skipLibCheck'];
  return run(bin('tsc'), [...common, ...args], { cwd }).then(
    ({ stdout }) => stdout,
    (err: { stdout?: string; stderr?: string }) => `${err.stdout}${err.stderr}`,
  );
}

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// The generator's release, fetched once with Maven into the project's cache (as scripts/kafka
// fetches the broker's jars). A new release: bump it here and run this test.
const generatorVersion = '7.25.0';

async function openApiGeneratorJar(): Promise<string> {
  const cacheDir = join(
    process.env.CONNECT_CACHE_DIR ?? join(homedir(), '.cache/connect-integration'),
    'openapi-generator',
  );
  const jar = join(cacheDir, `openapi-generator-cli-${generatorVersion}.jar`);
  if (existsSync(jar)) return jar;
  // Fetched into a directory of its own, then renamed: concurrent runs never see half a jar.
  const fetchDir = await mkdtemp(join(dir, 'mvn-'));
  await run(
    'mvn',
    [
      '-B',
      '-q',
      'org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy',
      `-Dartifact=org.openapitools:openapi-generator-cli:${generatorVersion}`,
      `-DoutputDirectory=${fetchDir}`,
    ],
    { cwd: fetchDir, maxBuffer: 16 * 1024 * 1024 },
  );
  await mkdir(cacheDir, { recursive: true });
  await rename(join(fetchDir, `openapi-generator-cli-${generatorVersion}.jar`), jar);
  return jar;
}
