// Child processes of bench/inbound.ts: the gateway, the worker runner, the load generator and the
// bare producer each run as their own Node process (under tsx), and memory is read from /proc.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { gatewayNodeFlags } from '../../src/gateway/node-flags.js';
import { resultPrefix } from './stats.js';

const repoRoot = new URL('../..', import.meta.url).pathname;

export type Child = {
  child: ChildProcess;
  pid: number;
  output(): string;
  /** Resolves with the first match of `pattern` in the output; rejects on exit or timeout. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after graceMs; resolves when the process is gone. */
  stop(graceMs?: number): Promise<number | null>;
};

/** BENCH_LOG_DIR: where every child's output is also written (e.g. a gateway run with --trace-gc). */
const logDir = process.env.BENCH_LOG_DIR ?? '';

/**
 * The gateway's Node options: src/gateway/node-flags.ts's, or BENCH_GATEWAY_NODE_FLAGS instead
 * (space-separated; "none" for none), to compare V8 settings as node-flags.ts reports them.
 */
export function benchGatewayNodeFlags(): readonly string[] {
  const set = process.env.BENCH_GATEWAY_NODE_FLAGS?.trim();
  if (!set) return gatewayNodeFlags;
  return set === 'none' ? [] : set.split(/\s+/);
}

/** stdin: a pipe the caller writes to (child.stdin), else none. */
export function spawnTsx(
  script: string,
  env: NodeJS.ProcessEnv,
  label: string,
  nodeArgs: string[] = [],
  { stdin = false } = {},
): Child {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script], {
    cwd: repoRoot, // scripts are named relative to the repository, and tsx resolves from there
    env,
    stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => {
    output += d.toString();
    if (logDir) appendFileSync(join(logDir, `${label.replaceAll(' ', '-')}.log`), d);
    if (output.length > 4_000_000) output = output.slice(-2_000_000); // a chatty child must not grow us
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    pid: child.pid!,
    output: () => output,
    exited,
    async waitFor(pattern, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = output.match(pattern);
        if (m) return m;
        if (done) throw new Error(`${label} exited before printing ${pattern}:\n${output.slice(-3000)}`);
        if (Date.now() > deadline)
          throw new Error(`${label} did not print ${pattern} in ${timeoutMs} ms:\n${output.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop(graceMs = 20_000) {
      if (done) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Runs a benchmark child to its end and returns the JSON it printed after resultPrefix. */
export function runForResult<T>(script: string, env: NodeJS.ProcessEnv, label: string, timeoutMs: number): Promise<T> {
  return resultOf<T>(spawnTsx(script, env, label), label, timeoutMs);
}

/** The JSON a benchmark child prints after resultPrefix, once it ends (killed after timeoutMs). */
export async function resultOf<T>(c: Child, label: string, timeoutMs: number): Promise<T> {
  const timer = setTimeout(() => c.child.kill('SIGKILL'), timeoutMs);
  const code = await c.exited;
  clearTimeout(timer);
  const line = c
    .output()
    .split('\n')
    .find((l) => l.startsWith(resultPrefix));
  if (code !== 0 || !line) throw new Error(`${label} failed (exit ${code}):\n${c.output().slice(-3000)}`);
  return JSON.parse(line.slice(resultPrefix.length)) as T;
}

export type Memory = { rssMiB: number; hwmMiB: number };

/** VmRSS and VmHWM (peak resident set) of a process, in MiB; null once it is gone. */
export function readMemory(pid: number): Memory | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
}

/** Resets VmHWM to the current RSS (Linux: write 5 to clear_refs); false when not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Samples a process's RSS every intervalMs until stop(); reports the largest sample and VmHWM then. */
export function sampleMemory(pid: number, intervalMs = 50) {
  let maxRss = 0;
  let samples = 0;
  const first = readMemory(pid);
  const take = () => {
    const m = readMemory(pid);
    if (!m) return;
    samples++;
    maxRss = Math.max(maxRss, m.rssMiB);
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      const last = readMemory(pid);
      return {
        startRssMiB: first?.rssMiB ?? NaN,
        maxSampledRssMiB: maxRss,
        endRssMiB: last?.rssMiB ?? NaN,
        peakHwmMiB: last?.hwmMiB ?? NaN,
        samples,
      };
    },
  };
}

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU seconds so far of a process's threads, summed by thread name (the gateway names its bulk
 * threads: batch-parse, kafka-producer; the event loop's thread is the one named after the
 * process). Threads that exited are not counted.
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = tid === String(pid) ? 'event loop' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / 100);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** The whole machine's busy and total CPU time so far (seconds summed over cores), from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / 100, total: total / 100 };
}

/** CPU seconds so far of every live process whose command name is `java` or `postgres`, by pid. */
function serviceProcesses(dbName: string): Map<number, { comm: string; cpu: number; ours: boolean }> {
  const out = new Map<number, { comm: string; cpu: number; ours: boolean }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (comm !== 'java' && comm !== 'postgres') continue;
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let ours = false;
    try {
      // A backend's process title names its database: "postgres: user db host(port) state".
      ours = comm === 'postgres' && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(` ${dbName} `);
    } catch {
      // gone
    }
    out.set(Number(entry), { comm, cpu: (Number(f[11]) + Number(f[12])) / 100, ours });
  }
  return out;
}

/** The pid of the broker JVM serving `port` (scripts/kafka's server.properties path names it), or null. */
export function brokerPid(port: number): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes('kafka.Kafka') && cmd.includes(`kafka-${port}/server.properties`)) return Number(entry);
    } catch {
      // gone
    }
  }
  return null;
}

/** CPU seconds of this process plus its exited, waited-for children (utime+stime+cutime+cstime). */
function selfAndReapedChildren(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

export type PhaseCpu = {
  wallSeconds: number;
  /** Average busy cores of the whole machine. */
  busyCores: number;
  /** This benchmark's processes (orchestrator, gateway, workers, load generator, bare producer, psql, and the COPY's backend). */
  benchCores: number;
  /** The broker's JVM (null pid: every `java`). */
  brokerCores: number;
  /** PostgreSQL processes alive at both ends of the phase (whoever loads them), and our database's backends started during it. */
  postgresCores: number;
  /**
   * Everything else: other users of the machine (and short-lived PostgreSQL backends or JVMs,
   * which take their CPU time with them when they exit). High values make the figures unreliable.
   */
  otherCores: number;
};

/**
 * Who used the CPU during a phase. track() long-lived children alive at the start, pass them to
 * end() (before stopping them); children that exited and were reaped count through this process.
 */
export function phaseCpu(broker: number | null, dbName: string) {
  const m0 = machineCpu();
  const p0 = serviceProcesses(dbName);
  const s0 = selfAndReapedChildren();
  const t0 = performance.now();
  const live0 = new Map<number, number>();
  return {
    track(pid: number) {
      live0.set(pid, cpuSeconds(pid));
    },
    /** extraBenchSeconds: CPU of bench-owned processes read elsewhere (e.g. the COPY's backend, which is excluded here). */
    end(livePids: number[], extra: { benchSeconds: number; excludePid?: number } = { benchSeconds: 0 }): PhaseCpu {
      const wall = (performance.now() - t0) / 1000;
      const m1 = machineCpu();
      const p1 = serviceProcesses(dbName);
      let live = 0;
      for (const pid of livePids) live += cpuSeconds(pid) - (live0.get(pid) ?? 0);
      const bench = selfAndReapedChildren() - s0 + live + extra.benchSeconds;
      let brokerCpu = 0;
      let postgres = 0;
      for (const [pid, now] of p1) {
        if (pid === extra.excludePid) continue;
        const before = p0.get(pid);
        // Started during the phase: only our database's backends are known to be ours.
        if (!before || before.comm !== now.comm) {
          if (now.ours) postgres += now.cpu;
          continue;
        }
        const d = now.cpu - before.cpu;
        if (now.comm === 'postgres') postgres += d;
        else if (broker === null || pid === broker) brokerCpu += d;
      }
      const busy = m1.busy - m0.busy;
      const cores = (n: number) => Math.round((n / wall) * 100) / 100;
      return {
        wallSeconds: Math.round(wall * 1000) / 1000,
        busyCores: cores(busy),
        benchCores: cores(bench),
        brokerCores: cores(brokerCpu),
        postgresCores: cores(postgres),
        otherCores: cores(Math.max(0, busy - bench - brokerCpu - postgres)),
      };
    },
  };
}

/** Cores this process may use (nproc honours CPU affinity, unlike os.cpus()). */
export function machineCores(): number {
  return Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()) || 1;
}

/** The machine a bench ran on, for its results JSON. */
export function machineFacts(loadAverageAtStart: number[]) {
  return {
    cpus: machineCores(),
    node: process.version,
    loadAverageAtStart,
    loadAverageAtEnd: loadavg().map((n) => Math.round(n * 100) / 100),
  };
}

/**
 * Runs a bench's main function, tears down what it started whatever happens (also on Ctrl-C),
 * and exits 1 with the error when it failed.
 */
export async function runBench(run: () => Promise<void>, teardown: () => Promise<void>): Promise<never> {
  let tornDown: Promise<void> | undefined;
  const teardownOnce = () => (tornDown ??= teardown());
  process.once('SIGINT', () => {
    process.stderr.write('bench: interrupted: tearing down\n');
    void teardownOnce().finally(() => process.exit(130));
  });
  let failed = false;
  try {
    await run();
  } catch (err) {
    failed = true;
    process.stderr.write(`bench: failed: ${(err as Error).stack ?? String(err)}\n`);
  } finally {
    await teardownOnce();
  }
  process.exit(failed ? 1 : 0);
}
