import { spawnSync } from 'node:child_process';

// promtool (Prometheus's rule checker) from Debian's `prometheus` package: used when on PATH,
// installed with apt-get when missing and this runs as root, else the caller skips with the reason.

export type Promtool = { path: string } | { missing: string };

const run = (cmd: string, args: string[], timeoutMs = 600_000) =>
  spawnSync(cmd, args, {
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });

const onPath = (): string | null => {
  const found = run('sh', ['-c', 'command -v promtool']);
  return found.status === 0 ? found.stdout.trim() : null;
};

const lockBusy = (output: string) => /Could not get lock|dpkg.*lock|Unable to acquire the dpkg/i.test(output);
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** apt-get install, waiting for the dpkg lock (apt's own wait, then retries) and updating the lists once if the package is unknown. */
function aptInstall(pkg: string): string | null {
  let updated = false;
  let last = '';
  for (let attempt = 1; attempt <= 10; attempt++) {
    const r = run('apt-get', ['-o', 'DPkg::Lock::Timeout=60', 'install', '-y', '--no-install-recommends', pkg]);
    if (r.status === 0) return null;
    last = `${r.stdout}\n${r.stderr}`.trim();
    if (lockBusy(last)) {
      sleep(5000);
      continue;
    }
    if (!updated && /Unable to locate package|has no installation candidate/.test(last)) {
      updated = true;
      run('apt-get', ['-o', 'DPkg::Lock::Timeout=60', 'update']);
      continue;
    }
    break;
  }
  return last.split('\n').slice(-3).join(' ');
}

let found: Promtool | undefined;

/** promtool's path, or why there is none (once per test file). */
export function promtool(): Promtool {
  if (found) return found;
  const path = onPath();
  if (path) return (found = { path });
  if (process.getuid?.() !== 0)
    return (found = { missing: 'promtool is not installed and apt-get needs root (apt-get install prometheus)' });
  if (run('sh', ['-c', 'command -v apt-get']).status !== 0)
    return (found = {
      missing: "promtool is not installed and there is no apt-get to install Debian's prometheus package",
    });
  const failure = aptInstall('prometheus');
  const installed = onPath();
  if (installed) return (found = { path: installed });
  return (found = { missing: `apt-get install prometheus failed: ${failure ?? 'promtool still not on PATH'}` });
}
