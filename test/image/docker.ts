import { execFile, execFileSync } from 'node:child_process';

// The Docker side of test/image/image.test.ts: the daemon scripts/image-daemon finds or starts,
// and the containers this run makes (labelled, named, removed at the end; nothing else touched).

/** The label on every image and container the image test makes. */
export const madeBy = 'io.connect-integration.made-by=test/image';

export type Docker = { cli: string; host: string; ownDaemon: boolean };

/** scripts/image-daemon up: the daemon to use, or why there is none (its KEY=value lines). */
export function dockerUp(): Docker | { skip: string } {
  const out = execFileSync('scripts/image-daemon', ['up'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const kv = new Map(
    out
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
  );
  if (kv.has('SKIP')) return { skip: kv.get('SKIP')! };
  return { cli: kv.get('DOCKER')!, host: kv.get('DOCKER_HOST')!, ownDaemon: kv.get('OWN_DAEMON') === '1' };
}

/** Stops the daemon dockerUp started, if it did. */
export function dockerDown(docker: Docker): void {
  if (docker.ownDaemon) execFileSync('scripts/image-daemon', ['down'], { stdio: 'inherit' });
}

export type Result = { code: number; stdout: string; stderr: string };

/** Runs a command with the daemon's environment; resolves with its exit code, never rejects. */
export function runWith(docker: Docker, file: string, args: string[], echo = false): Promise<Result> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { env: { ...process.env, DOCKER: docker.cli, DOCKER_HOST: docker.host }, maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (echo) child.stderr?.pipe(process.stderr);
  });
}

/** A docker CLI call that must succeed: its stdout, trimmed. */
export async function dockerOk(docker: Docker, args: string[]): Promise<string> {
  const r = await runWith(docker, docker.cli, args);
  if (r.code !== 0) throw new Error(`docker ${args.join(' ')}: exit ${r.code}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/** Every line a container wrote (stdout and stderr), in order of the streams. */
export async function containerLines(docker: Docker, id: string): Promise<string[]> {
  const r = await runWith(docker, docker.cli, ['logs', id]);
  return `${r.stdout}\n${r.stderr}`.split('\n').filter((line) => line.trim() !== '');
}

/** The lines of a log that are not JSON objects. */
export const notJson = (lines: string[]) =>
  lines.filter((line) => {
    try {
      return typeof JSON.parse(line) !== 'object';
    } catch {
      return true;
    }
  });
