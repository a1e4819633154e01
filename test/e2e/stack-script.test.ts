import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// The README's start command, as a user runs it, on ports and a state dir of its own:
// Kafka from the project's script, migrations, the gateway and the workers as real processes.
const run = promisify(execFile);
let db: TestDatabase;
let stateDir: string;
let env: NodeJS.ProcessEnv;
const port = 30000 + Math.floor(Math.random() * 20000);

const stack = (command: string) => run('scripts/stack', [command], { env, timeout: 180_000 });

beforeAll(async () => {
  db = await createTestDatabase();
  stateDir = await mkdtemp(join(tmpdir(), 'connect-stack-'));
  env = {
    ...process.env,
    PORT: String(port),
    KAFKA_PORT: String(port + 1),
    KAFKA_CONTROLLER_PORT: String(port + 2),
    KAFKA_BROKERS: `127.0.0.1:${port + 1}`,
    DATABASE_URL: db.url,
    STATE_DIR: stateDir,
  };
});

afterAll(async () => {
  await stack('down').catch(() => undefined);
  await rm(stateDir, { recursive: true, force: true });
  await db?.drop();
});

describe('scripts/stack', () => {
  it('brings everything up, is idempotent, and stops what it started gracefully', async () => {
    const up = await stack('up');
    expect(up.stdout).toContain(`gateway: http://127.0.0.1:${port}`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);

    const again = await stack('up');
    expect(again.stdout).toContain('gateway already running');
    expect(again.stdout).toContain('kafka: already running');

    const status = await stack('status');
    expect(status.stdout).toMatch(/gateway running[\s\S]*workers running/);

    const down = await stack('down');
    expect(down.stdout).toContain('gateway stopped');
    await expect(stack('status')).rejects.toMatchObject({ code: 3 });
    await expect(fetch(`http://127.0.0.1:${port}/livez`)).rejects.toThrow();

    // SIGTERM was handled: both processes logged an orderly stop.
    for (const name of ['gateway', 'workers']) {
      const log = await readFile(join(stateDir, 'logs', `${name}.log`), 'utf8');
      expect(log, name).toContain('"msg":"stopped"');
    }
  });
});
