import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The state letter of /proc/<pid>[/task/<tid>]/stat (R, S, D, T, Z, ...), or null when gone. */
async function stateOf(statPath: string): Promise<string | null> {
  const stat = await readFile(statPath, 'utf8').catch(() => null);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

/** Alive and not a zombie (a SIGKILLed broker may stay unreaped for a while). */
async function alive(pid: number): Promise<boolean> {
  const state = await stateOf(`/proc/${pid}/stat`);
  return state !== null && state !== 'Z';
}

/** The threads of pid that are not stopped (kill() returns before a signal's stop takes effect). */
async function runningThreads(pid: number): Promise<string[]> {
  const tids = await readdir(`/proc/${pid}/task`).catch(() => []);
  const states = await Promise.all(tids.map(async (tid) => [tid, await stateOf(`/proc/${pid}/task/${tid}/stat`)]));
  return states
    .filter(([, state]) => state !== null && state !== 'T' && state !== 't')
    .map(([tid, s]) => `${tid}:${s}`);
}

/**
 * A second broker of the project's own script, on its own ports and state dir, for fault tests.
 * `extraConfig`: server.properties lines that override the script's (KAFKA_EXTRA_CONFIG).
 */
export async function startThrowawayKafka(extraConfig = '') {
  // Below the kernel's ephemeral range (32768+), where an outgoing connection may hold the port.
  const port = 20000 + Math.floor(Math.random() * 12000);
  const stateDir = await mkdtemp(join(tmpdir(), 'connect-kafka-'));
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(port + 1),
    STATE_DIR: stateDir,
  };
  // scripts/kafka keeps the JVM's pid here (see "Per port" in the script's header).
  const nodeDir = join(stateDir, `kafka-${port}`);
  const pidFile = join(nodeDir, 'kafka.pid');
  const kafka = (command: string, config = extraConfig) =>
    run('scripts/kafka', [command], { env: { ...env, KAFKA_EXTRA_CONFIG: config }, timeout: 180_000 });

  /** The broker's pid, only if it is our JVM (command line names kafka.Kafka and our config). */
  async function brokerPid(): Promise<number | null> {
    const text = await readFile(pidFile, 'utf8').catch(() => '');
    const pid = Number(text.replace(/\D/g, ''));
    if (!pid) return null;
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ');
    return cmdline.includes(` kafka.Kafka ${join(nodeDir, 'server.properties')}`) ? pid : null;
  }

  try {
    await kafka('up');
  } catch (err) {
    // A broker that started but was not ready in time (or a killed script) must not outlive the test.
    await kafka('down').catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    throw err;
  }
  return {
    brokers: `127.0.0.1:${port}`,
    port,
    /** `scripts/kafka down`: SIGTERM, a controlled shutdown (SIGKILL only after 30 s). */
    stop: () => kafka('down'),
    /** `scripts/kafka up`, with other extra config lines when given. */
    start: (config?: string) => kafka('up', config),
    /** SIGKILL of the broker's JVM, as in a crash; resolves once it is gone. */
    async kill() {
      const pid = await brokerPid();
      if (pid === null) throw new Error(`no broker of ours runs on port ${port} (pid file ${pidFile})`);
      process.kill(pid, 'SIGKILL');
      const deadline = Date.now() + 30_000;
      while (await alive(pid)) {
        if (Date.now() > deadline) throw new Error(`broker pid ${pid} still alive 30 s after SIGKILL`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    /**
     * SIGSTOP of the broker's JVM: connections stay open and nothing answers (a stalled broker).
     * Resolves once every thread of it is stopped, not when the signal is sent.
     */
    async pause() {
      const pid = await brokerPid();
      if (pid === null) throw new Error(`no broker of ours runs on port ${port} (pid file ${pidFile})`);
      process.kill(pid, 'SIGSTOP');
      const deadline = Date.now() + 30_000;
      for (let running = await runningThreads(pid); running.length > 0; running = await runningThreads(pid)) {
        if (Date.now() > deadline)
          throw new Error(`broker pid ${pid}: threads not stopped 30 s after SIGSTOP: ${running.join(' ')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    /** Threads of the broker's JVM that are not stopped (after pause(): none), for a failure's message. */
    async unstoppedThreads() {
      const pid = await brokerPid();
      return pid === null ? ['no broker'] : runningThreads(pid);
    },
    /** SIGCONT after pause(). */
    async resume() {
      const pid = await brokerPid();
      if (pid !== null) process.kill(pid, 'SIGCONT');
    },
    async destroy() {
      await this.resume().catch(() => undefined); // a stopped JVM would not hear scripts/kafka down
      await kafka('down').catch(() => undefined);
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

export type ThrowawayKafka = Awaited<ReturnType<typeof startThrowawayKafka>>;
