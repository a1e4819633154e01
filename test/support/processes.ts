import { spawn, type ChildProcess } from 'node:child_process';
import { serviceArgs } from './service-build.js';
import type { Config } from '../../src/shared/config.js';
import { gatewayNodeFlags } from '../../src/gateway/node-flags.js';

/** The environment a real service process needs to join a test's config (database, topics). */
export const processEnv = (config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  DATABASE_URL: config.database.url,
  KAFKA_BROKERS: config.kafka.brokers.join(','),
  KAFKA_TOPIC_PREFIX: config.kafka.topicPrefix,
  LOG_LEVEL: 'warn',
  ...extra,
});

export type ProcessExit = { code: number | null; signal: NodeJS.Signals | null };

/** Keeps the last `max` characters a process wrote (a process logging through an outage can write a lot). */
const outputMax = 512 * 1024;

/** Service processes spawned in this test file that have not exited yet. */
const live = new Set<ChildProcess>();

/**
 * SIGKILLs every service process this file spawned that is still running, and waits for them:
 * run after each file (test/setup/kill-left-processes.ts), so a test that failed between spawning
 * a process and stopping it does not leave it running beside the rest of the suite.
 */
export async function killLeftProcesses(): Promise<void> {
  await Promise.all(
    [...live].map((child) => {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return gone;
    }),
  );
}

/** A real service process (its entry compiled, or under tsx in another tree: serviceArgs), its output and its exit. */
function spawnService(
  entry: string,
  env: NodeJS.ProcessEnv,
  readyLine: RegExp,
  what: string,
  nodeFlags: readonly string[] = [],
  cwd?: string,
) {
  const args = cwd ? ['--import', 'tsx', entry] : serviceArgs(entry);
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, ...args], {
    env,
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let output = '';
  let ready: RegExpExecArray | null = null;
  let exit: ProcessExit | null = null;
  const collect = (d: Buffer) => {
    output += d;
    ready ??= readyLine.exec(output);
    if (output.length > outputMax) output = output.slice(-outputMax);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<ProcessExit>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      exit = { code, signal };
      resolve(exit);
    }),
  );
  const untilReady = async (timeoutMs: number): Promise<RegExpExecArray> => {
    const deadline = Date.now() + timeoutMs;
    while (!ready) {
      if (exit) throw new Error(`${what} exited early (${JSON.stringify(exit)}): ${output.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`${what} did not start: ${output.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return ready;
  };
  return {
    child,
    pid: child.pid,
    output: () => output,
    /** How it ended, once it has (code null and a signal when a signal ended it). */
    exit: () => exit,
    exited,
    untilReady,
    /** Sends the signal and resolves with the exit code (null when the signal ended it). */
    kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
      if (!exit) child.kill(signal);
      return (await exited).code;
    },
  };
}

/**
 * Where a service process runs from: `root` is another tree of the project (e.g. a previous
 * release's, test/support/previous-release.ts), its entry and its tsx resolved there; default
 * this checkout (the test process's cwd).
 */
export type SpawnOptions = { root?: string };

/** A real worker runner process (`src/workers/runner.ts` under tsx), for crash tests. */
export function spawnWorkers(
  config: Config,
  kinds: string,
  extra: Record<string, string> = {},
  options: SpawnOptions = {},
) {
  const service = spawnService(
    'src/workers/runner.ts',
    // Any free port for /metrics, /livez, /readyz: tests run many workers side by side.
    processEnv(config, { WORKERS: kinds, WORKER_HTTP_HOST: '127.0.0.1', WORKER_HTTP_PORT: '0', ...extra }),
    /workers: running/,
    'worker',
    [],
    options.root,
  );
  return {
    ...service,
    /** Resolves once the runner reports its consumer groups joined. */
    running: async (timeoutMs = 60_000) => {
      await service.untilReady(timeoutMs);
    },
  };
}

/**
 * A real gateway process (`src/gateway/server.ts` under tsx) on 127.0.0.1 and a free port
 * (PORT=0); `listening()` resolves with its URL from the line `gateway: listening on <url>`.
 */
export function spawnGateway(config: Config, extra: Record<string, string> = {}, options: SpawnOptions = {}) {
  const service = spawnService(
    'src/gateway/server.ts',
    processEnv(config, { HOST: '127.0.0.1', PORT: '0', ...extra }),
    /gateway: listening on (http:\/\/[^\s"]+)/,
    'gateway',
    gatewayNodeFlags,
    options.root,
  );
  return {
    ...service,
    listening: async (timeoutMs = 60_000): Promise<string> => (await service.untilReady(timeoutMs))[1]!,
  };
}

export type WorkerProcess = ReturnType<typeof spawnWorkers>;
export type GatewayProcess = ReturnType<typeof spawnGateway>;
