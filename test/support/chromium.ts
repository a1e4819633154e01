import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
const candidates = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
const found = () => candidates.find((path) => existsSync(path));

/** apt-get's answer when another dpkg/apt holds the lock (it exits 100 then, as on other failures). */
const lockBusy = (output: string) => /Could not get lock|dpkg frontend lock|Unable to acquire/i.test(output);

/**
 * Debian's chromium: its path, installing it with apt-get when missing and allowed (root), or
 * the reason it is not available (the caller skips with it).
 */
export async function systemChromium(): Promise<{ path: string } | { skip: string }> {
  const present = found();
  if (present) return { path: present };
  if (process.getuid?.() !== 0) return { skip: 'chromium is not installed and installing it needs root' };
  if (!existsSync('/usr/bin/apt-get')) return { skip: 'chromium is not installed and there is no apt-get' };
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let last = '';
  for (let attempt = 1; attempt <= 20; attempt++) {
    try {
      if (attempt === 1) await run('apt-get', ['update'], { env, maxBuffer: 64 << 20 }).catch(() => undefined);
      await run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { env, maxBuffer: 64 << 20 });
      const installed = found();
      return installed ? { path: installed } : { skip: 'apt-get installed chromium, but no chromium binary was found' };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      last = `${e.stderr ?? ''}${e.stdout ?? ''}` || e.message;
      if (!lockBusy(last)) break;
      await sleep(3000); // another apt-get or dpkg runs: wait for it
    }
  }
  return { skip: `chromium is not installed and apt-get could not install it: ${last.trim().split('\n').pop()}` };
}
