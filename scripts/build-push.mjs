#!/usr/bin/env node
// Builds dist/connect-push.mjs: the uploader (src/push) and everything it imports (its npm
// dependencies included) in one ES module that needs only Node 22+, no checkout, no node_modules.
// The gateway serves it at GET /downloads/connect-push.mjs (src/gateway/downloads). `npm run build`
// runs this after tsc (so the image and `npm start` have it); the test suite's global setup too.
/* global process, console */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const pushBundlePath = resolve(root, 'dist/connect-push.mjs');

/** Writes the bundle (atomically: a gateway reading it never sees half a file); returns its path. */
export async function buildPush(outfile = pushBundlePath) {
  const { version } = JSON.parse(await readFile(resolve(root, 'package.json'), 'utf8'));
  const result = await build({
    entryPoints: [resolve(root, 'src/push/cli.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    write: false,
    legalComments: 'eof',
    logLevel: 'error',
    banner: {
      // The bundled CommonJS dependencies call require() for Node's own modules.
      js: [
        '#!/usr/bin/env node',
        `// connect-push ${version}: bulk upload of targets to the Connect Integration Service.`,
        '// One file, built from src/push; needs only Node 22+. Usage: node connect-push.mjs --help',
        "import { createRequire as __connectPushRequire } from 'node:module';",
        'const require = __connectPushRequire(import.meta.url);',
      ].join('\n'),
    },
  });
  await mkdir(dirname(outfile), { recursive: true });
  const temporary = `${outfile}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, result.outputFiles[0].contents, { mode: 0o755 });
  await rename(temporary, outfile);
  return outfile;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = await buildPush(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`build-push: ${out}`);
}
