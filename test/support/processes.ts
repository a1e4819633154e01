import { spawn, type ChildProcess } from 'node:child_process';
import type { Config } from '../../src/shared/config.js';

/** The environment a real service process needs to join a test's config (database, topics). */
export const processEnv = (config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  DATABASE_URL: config.databaseUrl,
  KAFKA_BROKERS: config.kafkaBrokers.join(','),
  KAFKA_TOPIC_PREFIX: config.kafkaTopicPrefix,
  LOG_LEVEL: 'warn',
  ...extra,
});

/** A real worker runner process (`src/workers/runner.ts` under tsx), for crash tests. */
export function spawnWorkers(config: Config, kinds: string, extra: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/workers/runner.ts'], {
    env: processEnv(config, { WORKERS: kinds, ...extra }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    /** Resolves once the runner reports its consumer groups joined. */
    running: async () => {
      const deadline = Date.now() + 60_000;
      while (!output.includes('workers: running')) {
        if (child.exitCode !== null) throw new Error(`worker exited early: ${output}`);
        if (Date.now() > deadline) throw new Error(`worker did not start: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
      child.kill(signal);
      return exited;
    },
  };
}
