import { spawn } from 'node:child_process';
import { serviceArgs } from './service-build.js';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runAdmin } from '../../src/admin/run.js';

// The admin CLI on the database of `databaseUrl`, two ways: runAdminCli in this process
// (runAdmin, what src/admin/cli.ts runs, with the same arguments, environment and streams' text:
// a child process per command cost a tsx start of about a second), runAdminProcess as operators
// run it (a child process: for what only the process wrapper does, its exit code and stdout).

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export type CliRun = { code: number | null; stdout: string; stderr: string };

/** A stream that keeps what is written to it, at once (no event to wait for). */
const collected = () => {
  let text = '';
  const stream = new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
};

export async function runAdminCli(databaseUrl: string, ...args: string[]): Promise<CliRun> {
  const stdout = collected();
  const stderr = collected();
  const code = await runAdmin(args, {
    stdout: stdout.stream,
    stderr: stderr.stream,
    env: { ...process.env, DATABASE_URL: databaseUrl },
  });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

export function runAdminProcess(databaseUrl: string, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...serviceArgs('src/admin/cli.ts'), ...args], {
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
