import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { scaled } from '../support/time-scale.js';

// Issue 13: stack traces of the compiled service name the TypeScript sources. The build (tsc with
// the project's tsconfig) writes source maps, and every way the compiled service is started runs
// Node with --enable-source-maps.
const run = promisify(execFile);

describe('source maps', () => {
  it(
    'map an error thrown in the compiled build to its TypeScript line',
    async () => {
      // Inside the checkout, so the compiled files find its node_modules.
      await mkdir('.state', { recursive: true });
      const out = await mkdtemp(join(process.cwd(), '.state', 'build-'));
      try {
        await run('npx', ['tsc', '-p', 'tsconfig.json', '--outDir', out], { timeout: scaled(300_000) });
        const script = `import(${JSON.stringify(join(out, 'shared/config.js'))}).then((m) => m.loadConfig({ PORT: 'eighty' }))`;
        const failed = await run(process.execPath, ['--enable-source-maps', '-e', script]).then(
          () => null,
          (err: { stderr: string }) => err.stderr,
        );
        expect(failed, 'the compiled loadConfig refuses PORT=eighty').not.toBeNull();
        expect(failed).toMatch(/src\/shared\/config\.ts:\d+/);
        expect(failed).not.toMatch(/shared\/config\.js:\d+/);
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    },
    scaled(360_000),
  );

  it('are on wherever the compiled service starts', async () => {
    const [stack, dockerfile] = await Promise.all([readFile('scripts/stack', 'utf8'), readFile('Dockerfile', 'utf8')]);
    expect(stack).toMatch(
      /scripts\/supervise .* node --enable-source-maps (\$\{NODE_FLAGS\[\$name\]\} )?"\$\{ENTRY\[\$name\]\}"/,
    );
    expect(dockerfile).toMatch(/^ENV NODE_OPTIONS=--enable-source-maps$/m);
  });
});
