import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The admin CLI as operators run it: a child process (tsx) on the database of `databaseUrl`.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export type CliRun = { code: number | null; stdout: string; stderr: string };

export function runAdminCli(databaseUrl: string, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args], {
      cwd: repoRoot,
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
