// The service as the tests' processes run it: src/ compiled once per test run by esbuild (what tsx
// does on every start, done ahead), run by plain `node --enable-source-maps`. A process started
// under tsx spent about 2.5 s of CPU loading the gateway's or the workers' modules, against 1.2 s
// compiled, and the suite starts hundreds of them on 2 cores (docs/benchmarks.md).
//
// Each run compiles into a directory of its own at the checkout's top level (`.test-build-<pid>`):
// beside src/, so what the code finds relative to its own file (migrations/, package.json,
// dist/connect-push.mjs, the thread pools' task modules) resolves as it does from src/ and from
// the image's dist/; and of its own, so two runs in one checkout never rewrite each other's files.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const prefix = '.test-build-';
/** Whether a process of this pid runs (a run's leftovers are removed once their process is gone). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Compiles src/ into this run's directory (and removes those of runs that died); returns it. */
export async function buildService(root: string): Promise<string> {
  for (const name of readdirSync(root).filter((n) => n.startsWith(prefix))) {
    const pid = Number(name.slice(prefix.length));
    if (pid === process.pid || !alive(pid)) rmSync(join(root, name), { recursive: true, force: true });
  }
  const dir = `${prefix}${process.pid}`;
  await build({
    entryPoints: [join(root, 'src/**/*.ts')],
    outdir: join(root, dir),
    outbase: join(root, 'src'),
    format: 'esm',
    platform: 'node',
    target: 'node22',
    sourcemap: true,
    logLevel: 'warning',
  });
  return dir;
}

export function removeServiceBuild(root: string, dir: string) {
  rmSync(join(root, dir), { recursive: true, force: true });
}

/**
 * How to start a source file of this checkout as a process: `node --enable-source-maps` on its
 * compiled module when the run built one (CONNECT_TEST_BUILD, set by test/setup/global-setup.ts),
 * else under tsx. Arguments for `node`, before the script's own.
 */
export function serviceArgs(entry: string): string[] {
  const dir = process.env.CONNECT_TEST_BUILD;
  const compiled = dir && entry.replace(/^src\/(.*)\.ts$/, `${dir}/$1.js`);
  if (compiled && compiled !== entry && existsSync(compiled)) return ['--enable-source-maps', compiled];
  return ['--import', 'tsx', entry];
}
