import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A second broker of the project's own script, on its own ports and state dir, for fault tests. */
export async function startThrowawayKafka() {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const stateDir = await mkdtemp(join(tmpdir(), 'connect-kafka-'));
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(port + 1),
    STATE_DIR: stateDir,
  };
  const kafka = (command: string) => run('scripts/kafka', [command], { env, timeout: 120_000 });
  await kafka('up');
  return {
    brokers: `127.0.0.1:${port}`,
    stop: () => kafka('down'),
    start: () => kafka('up'),
    async destroy() {
      await kafka('down').catch(() => undefined);
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}
