import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// The README's start command, as a user runs it, on ports and a state dir of its own:
// Kafka from the project's script, migrations, the gateway and the workers as real processes
// under the script's supervisors. Slow on a loaded machine (tsc, a Kafka start): every wait
// polls for a condition with a generous deadline; nothing asserts on durations.
const run = promisify(execFile);
let db: TestDatabase;
let stateDir: string;
let otherStateDir: string;
let env: NodeJS.ProcessEnv;
let squatter: Server | undefined;
// Below the kernel's ephemeral range (32768+), where an outgoing connection may hold a port the
// stack wants to listen on (a restarted worker once met EADDRINUSE on its metrics port there).
const port = 20000 + Math.floor(Math.random() * 12000);
let takenPort = 0;

type Env = NodeJS.ProcessEnv;
const stack = (command: string, withEnv: Env = env) =>
  run('scripts/stack', [command], { env: withEnv, timeout: 300_000 });

// Alive and not a zombie (an exited process nobody reaped yet counts as gone).
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return true;
  }
};

const readPid = async (dir: string, file: string): Promise<number | undefined> => {
  const text = await readFile(join(dir, file), 'utf8').catch(() => '');
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
};

const readLog = (name: string) => readFile(join(stateDir, 'logs', `${name}.log`), 'utf8').catch(() => '');

const readyStatus = () =>
  fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
    (r) => r.status,
    () => 0,
  );

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 180_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  stateDir = await mkdtemp(join(tmpdir(), 'connect-stack-'));
  otherStateDir = await mkdtemp(join(tmpdir(), 'connect-stack-taken-'));
  env = {
    ...process.env,
    PORT: String(port),
    KAFKA_PORT: String(port + 1),
    KAFKA_CONTROLLER_PORT: String(port + 2),
    KAFKA_BROKERS: `127.0.0.1:${port + 1}`,
    WORKER_HTTP_PORT: String(port + 3),
    DATABASE_URL: db.url,
    STATE_DIR: stateDir,
  };
});

afterAll(async () => {
  await new Promise((r) => (squatter ? squatter.close(r) : r(undefined)));
  await stack('down', { ...env, STATE_DIR: otherStateDir }).catch(() => undefined);
  await stack('down').catch(() => undefined);
  await rm(stateDir, { recursive: true, force: true });
  await rm(otherStateDir, { recursive: true, force: true });
  await db?.drop();
}, 300_000);

describe('scripts/stack', () => {
  it('brings everything up under supervision, restarts what dies, and stops what it started gracefully', async () => {
    // The state dir goes when the file ends: a failed `up` shows its processes' logs here.
    const up = await stack('up').catch(async (err: Error) => {
      const tail = async (name: string) => `--- ${name}.log ---\n${(await readLog(name)).slice(-3000)}`;
      throw new Error(`${err.message}\n${await tail('gateway')}\n${await tail('workers')}`);
    });
    expect(up.stdout).toContain(`gateway: http://127.0.0.1:${port}`);
    expect(await readyStatus()).toBe(200);
    expect(up.stdout).toContain(`worker metrics: http://127.0.0.1:${port + 3}/metrics`);
    expect((await fetch(`http://127.0.0.1:${port + 3}/livez`)).status).toBe(200);

    const again = await stack('up');
    expect(again.stdout).toContain('gateway already running');
    expect(again.stdout).toContain('kafka: already running');

    const status = await stack('status');
    expect(status.stdout).toMatch(/gateway running[\s\S]*workers running/);

    // Supervision: SIGKILL both children; their supervisors start them again.
    const gatewayPid = (await readPid(stateDir, 'gateway.pid'))!;
    const workersPid = (await readPid(stateDir, 'workers.pid'))!;
    expect(isAlive(gatewayPid) && isAlive(workersPid)).toBe(true);
    const workersLogBefore = (await readLog('workers')).length;
    process.kill(gatewayPid, 'SIGKILL');
    process.kill(workersPid, 'SIGKILL');

    let newGatewayPid: number | undefined;
    await waitFor('a new gateway process that is ready', async () => {
      newGatewayPid = await readPid(stateDir, 'gateway.pid');
      return (
        newGatewayPid !== undefined &&
        newGatewayPid !== gatewayPid &&
        isAlive(newGatewayPid) &&
        (await readyStatus()) === 200
      );
    });
    let newWorkersPid: number | undefined;
    await waitFor('a new workers process that runs its consumer groups', async () => {
      newWorkersPid = await readPid(stateDir, 'workers.pid');
      const log = (await readLog('workers')).slice(workersLogBefore);
      return (
        newWorkersPid !== undefined &&
        newWorkersPid !== workersPid &&
        isAlive(newWorkersPid) &&
        log.includes('workers: running')
      );
    });
    for (const name of ['gateway', 'workers']) {
      const log = await readLog(name);
      expect(log, name).toMatch(/supervisor: .*killed by SIGKILL.*restart/);
      // Log files hold JSON only (the supervisor's lines included), and no ERROR through a crash.
      const lines = log.split('\n').filter(Boolean);
      const notJson = lines.filter((line) => {
        try {
          JSON.parse(line);
          return false;
        } catch {
          return true;
        }
      });
      // The one plain line a process writes: its reason for failing to start, on stderr (the line
      // `npm start` reports).
      expect(
        notJson.filter((line) => !/^(gateway|workers): failed to start: /.test(line)),
        `${name}.log lines that are not JSON`,
      ).toEqual([]);
      expect(
        lines.filter((line) => (JSON.parse(line) as { level?: number }).level! >= 50),
        `${name}.log ERROR lines`,
      ).toEqual([]);
    }
    const afterRestart = await stack('status');
    expect(afterRestart.stdout).toMatch(/gateway running \(pid \d+.*restarts 1/);
    expect(afterRestart.stdout).toMatch(/workers running \(pid \d+.*restarts 1/);

    // status, logs and down remember what `up` used: only STATE_DIR given, not the ports.
    const bare: Env = { ...process.env, STATE_DIR: stateDir };
    for (const name of ['PORT', 'KAFKA_PORT', 'KAFKA_CONTROLLER_PORT', 'KAFKA_BROKERS', 'DATABASE_URL'])
      delete bare[name];
    const remembered = await stack('status', bare);
    expect(remembered.stdout).toContain(`http://127.0.0.1:${port}`);
    expect(remembered.stdout).toContain(`kafka: running on 127.0.0.1:${port + 1}`);
    expect(remembered.stdout).not.toContain(new URL(db.url).password || '\0no password\0');

    // `up` must see its own gateway listening, not whatever answers on the port: with the port
    // held by another server (that answers 200 to everything), `up` fails with one clear line
    // and leaves nothing of its own running.
    squatter = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => squatter!.listen(0, '0.0.0.0', resolve));
    takenPort = (squatter.address() as AddressInfo).port;
    const takenEnv: Env = { ...env, PORT: String(takenPort), STATE_DIR: otherStateDir };
    const failed = await stack('up', takenEnv).then(
      () => undefined,
      (err: { code?: number; stdout: string; stderr: string }) => err,
    );
    expect(failed, 'up with the port taken must fail').toBeDefined();
    expect(failed!.code).not.toBe(0);
    expect(failed!.stdout).not.toContain(`gateway: http://`);
    const lastLine = failed!.stderr.trim().split('\n').at(-1)!;
    expect(lastLine).toMatch(/^stack: error: gateway .*(EADDRINUSE|in use)/);
    for (const file of ['gateway.supervisor.pid', 'gateway.pid', 'workers.supervisor.pid', 'workers.pid']) {
      const pid = await readPid(otherStateDir, file);
      expect(pid === undefined || !isAlive(pid), `${file} (${pid}) left running`).toBe(true);
    }
    await expect(stack('status', takenEnv)).rejects.toMatchObject({ code: 3 });
    await new Promise((r) => squatter!.close(r));
    squatter = undefined;
    // The broker was not this failed `up`'s to stop: the first stack still runs whole.
    await stack('status');

    const gatewaySupervisor = await readPid(stateDir, 'gateway.supervisor.pid');
    const workersSupervisor = await readPid(stateDir, 'workers.supervisor.pid');
    const down = await stack('down', bare); // the remembered ports: this stack's broker is stopped too
    expect(down.stdout).toContain('gateway stopped');
    expect(down.stdout).toContain(`kafka: stopping broker on 127.0.0.1:${port + 1}`);
    await expect(stack('status')).rejects.toMatchObject({ code: 3 });
    await expect(fetch(`http://127.0.0.1:${port}/livez`)).rejects.toThrow();
    // Nothing is left to restart anything.
    for (const pid of [newGatewayPid!, newWorkersPid!, gatewaySupervisor!, workersSupervisor!]) {
      expect(isAlive(pid), `pid ${pid}`).toBe(false);
    }
    expect(existsSync(join(stateDir, 'gateway.supervisor.pid'))).toBe(false);

    // SIGTERM was handled: both (restarted) processes logged an orderly stop.
    for (const name of ['gateway', 'workers']) {
      const log = await readLog(name);
      expect(log, name).toContain('"msg":"stopped"');
    }
  }, 600_000);
});
