// The previous release's tree, for rolling-upgrade tests (issue 52): the last entry of
// releases.json, materialised once per machine under .state/releases/<version> (git archive of
// its commit; ignored by git, eslint, prettier and tsc) with its dependencies: a symlink to this
// checkout's node_modules when the two lock files differ in nothing but the project's own version,
// else `npm ci` there. Several test files may ask at once: one materialises (an exclusive lock
// directory), the others wait for it; a tree is only ever renamed into place complete.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** This checkout (the new release: the working tree). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export type Release = { version: string; commit: string; date: string };

export type PreviousRelease = Release & {
  /** The release's tree: run its processes with this as their cwd. */
  root: string;
  /** How its node_modules came: this checkout's (same lock file) or its own `npm ci`. */
  dependencies: 'linked' | 'installed';
};

/** The last release recorded in releases.json. */
export function lastRelease(): Release {
  const releases = JSON.parse(readFileSync(path.join(repoRoot, 'releases.json'), 'utf8')) as Release[];
  return releases.at(-1)!;
}

/** Why the history cannot give the release's tree (a shallow clone), or null when it can. */
async function unavailable(commit: string): Promise<string | null> {
  try {
    await run('git', ['-C', repoRoot, 'cat-file', '-e', `${commit}^{commit}`]);
    return null;
  } catch {
    const shallow = await run('git', ['-C', repoRoot, 'rev-parse', '--is-shallow-repository'])
      .then((r) => r.stdout.trim() === 'true')
      .catch(() => false);
    return `commit ${commit} is not in this clone's history${shallow ? ' (a shallow clone: git fetch --unshallow)' : ''}`;
  }
}

/** Why the last release's tree cannot be had here (the reason, for a skip), or null. */
export const previousReleaseUnavailable = (): Promise<string | null> => unavailable(lastRelease().commit);

/** The lock file without the project's own version (which every release changes). */
function lockWithoutVersion(text: string): unknown {
  const lock = JSON.parse(text) as { version?: string; packages?: Record<string, { version?: string }> };
  delete lock.version;
  if (lock.packages?.['']) delete lock.packages[''].version;
  return lock;
}

/** Takes the lock directory (exclusive create); an owner that died leaves a stale one, taken over. */
async function withLock<T>(lockDir: string, fn: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(path.join(lockDir, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(await readFile(path.join(lockDir, 'pid'), 'utf8').catch(() => 'NaN'));
      let alive = true;
      if (Number.isInteger(owner)) {
        try {
          process.kill(owner, 0);
        } catch {
          alive = false;
        }
      }
      if (!alive) {
        await rm(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${lockDir}: held by pid ${owner} for too long`);
      await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}

/** Runs a command in cwd; rejects with its output when it fails. */
function runIn(cwd: string, command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${output.slice(-3000)}`)),
    );
  });
}

/**
 * The previous release's tree, materialised if it is not yet; `{ unavailable }` (the reason)
 * when this clone's history does not hold its commit.
 */
export async function previousRelease(timeoutMs = 600_000): Promise<PreviousRelease | { unavailable: string }> {
  const release = lastRelease();
  const why = await unavailable(release.commit);
  if (why) return { unavailable: why };
  const releases = path.join(repoRoot, '.state', 'releases');
  const root = path.join(releases, release.version);
  const done = path.join(root, '.materialised');
  const read = (): PreviousRelease => ({
    ...release,
    root,
    dependencies: JSON.parse(readFileSync(done, 'utf8')).dependencies,
  });
  if (existsSync(done)) return read();
  await mkdir(releases, { recursive: true });
  return withLock(
    `${root}.lock`,
    async () => {
      if (existsSync(done)) return read(); // another process finished it while this one waited
      const staging = `${root}.staging-${process.pid}`;
      await rm(staging, { recursive: true, force: true });
      await rm(root, { recursive: true, force: true }); // a tree left incomplete
      await mkdir(staging, { recursive: true });
      await runIn(staging, 'bash', [
        '-c',
        `set -o pipefail; git -C "$0" archive --format=tar "$1" | tar -x -C .`,
        repoRoot,
        release.commit,
      ]);
      const { stdout: theirLock } = await run('git', ['-C', repoRoot, 'show', `${release.commit}:package-lock.json`], {
        maxBuffer: 64 << 20,
      });
      const ourLock = await readFile(path.join(repoRoot, 'package-lock.json'), 'utf8');
      let dependencies: PreviousRelease['dependencies'];
      if (
        existsSync(path.join(repoRoot, 'node_modules')) &&
        isDeepStrictEqual(lockWithoutVersion(theirLock), lockWithoutVersion(ourLock))
      ) {
        await symlink(path.join(repoRoot, 'node_modules'), path.join(staging, 'node_modules'), 'dir');
        dependencies = 'linked';
      } else {
        await runIn(staging, 'npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund']);
        dependencies = 'installed';
      }
      await writeFile(
        path.join(staging, '.materialised'),
        JSON.stringify({ ...release, dependencies, at: new Date().toISOString() }),
      );
      await rename(staging, root);
      return read();
    },
    timeoutMs,
  );
}
