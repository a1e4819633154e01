import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Alive and not a zombie (a SIGKILLed broker may stay unreaped for a while). */
async function alive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
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
    /** SIGSTOP of the broker's JVM: connections stay open and nothing answers (a stalled broker). */
    async pause() {
      const pid = await brokerPid();
      if (pid === null) throw new Error(`no broker of ours runs on port ${port} (pid file ${pidFile})`);
      process.kill(pid, 'SIGSTOP');
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
