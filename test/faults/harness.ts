import { reading } from '../support/kafka.js';
// Fault-injection harness (issue 11): real gateway and worker processes, a load generator that
// records every answer, an oracle that compares every acknowledged write with PostgreSQL, and
// one line of figures per scenario. Scenarios live in test/faults/*.test.ts.
import { randomBytes, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/shared/config.js';
import { createKafkaBus } from '../../src/shared/kafka/bus.js';
import { topicNames } from '../../src/shared/kafka/topics.js';
import { createLogger } from '../../src/shared/logger.js';
import { createDemo, type Demo } from '../support/fixtures.js';
import { mulberry32 } from '../support/prng.js';
import { spawnGateway, spawnWorkers, type ProcessExit, type SpawnOptions } from '../support/processes.js';
import { makeTargets } from '../support/targets.js';
import { scaled } from '../support/time-scale.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Environment of every service process in these tests. */
export const faultEnv: Record<string, string> = {
  // Writes answer 503 within this while Kafka is down (the issue's bound).
  KAFKA_PRODUCE_TIMEOUT_MS: '3000',
  // > KAFKA_PRODUCE_TIMEOUT_MS (refused otherwise); short, so messages of rolled-back writes
  // (Kafka acked, commit failed) do not hold their partition for the default 30 s.
  ORPHAN_GRACE_MS: '10000',
  // A SIGKILLed worker's partitions move to the others within seconds (the minimum).
  KAFKA_SESSION_TIMEOUT_MS: '6000',
  // The load generator is one client: the rate limit is not under test here.
  RATE_LIMIT_PER_MINUTE: '1000000',
  // Several chunks (Kafka messages) per batch, so partial application across a fault is exercised.
  INBOUND_CHUNK_MAX_BYTES: '16384',
};

/** The processes' configuration: the given database and brokers, topics of this scenario's own. */
export function faultConfig(databaseUrl: string, brokers: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC_PREFIX: `fault-${randomBytes(4).toString('hex')}.`,
    ...faultEnv,
    ...env,
  });
}

/** The test's own pool: never takes the test process down when PostgreSQL goes away. */
export function testPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5000 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/**
 * Polls until check() is true; false (not a throw) at the deadline, so a scenario can still
 * report. timeoutMs is an idle-machine figure, scaled by the run's measured time scale.
 */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + scaled(timeoutMs);
  for (;;) {
    try {
      if (await check()) return true;
    } catch {
      // e.g. PostgreSQL down while polling: not yet
    }
    if (Date.now() > deadline) return false;
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

type MemberSpec = {
  name: string;
  role: 'gateway' | 'workers';
  kinds: string;
  env: Record<string, string>;
  /** The tree it runs from (SpawnOptions.root); undefined: this checkout. */
  root?: string;
};
type Running = ReturnType<typeof spawnGateway> | ReturnType<typeof spawnWorkers>;
type Member = MemberSpec & {
  proc: Running;
  generation: number;
  /** The signal the test sent to end it; null while it is meant to run. */
  ending: NodeJS.Signals | null;
  /** SIGTERM did not end it within the deadline (it was SIGKILLed then). */
  termTimedOut: boolean;
  /** Started by the supervisor after an unplanned exit. */
  supervised: boolean;
  restarts: number;
};

export type ExitRecord = {
  name: string;
  generation: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The signal the test sent to end it, or null: it ended by itself. */
  sentSignal: NodeJS.Signals | null;
  expected: boolean;
};

const allFleets = new Set<Fleet>();

/**
 * The service processes of a scenario. An exit the test did not cause is recorded and, like a
 * supervisor would, the process is started again (so the oracle can still judge the data); the
 * scenario fails on it all the same.
 */
export class Fleet {
  readonly exits: ExitRecord[] = [];
  plannedRestarts = 0;
  unplannedRestarts = 0;
  private readonly members = new Map<string, Member>();
  private readonly outputs = new Map<string, string>();
  /** Live gateways' URLs by member name; requests go round-robin across them. */
  private readonly gatewayUrls = new Map<string, string>();
  private nextGateway = 0;
  private closed = false;

  constructor(
    readonly config: Config,
    private readonly env: Record<string, string> = {},
  ) {
    allFleets.add(this);
  }

  /**
   * A live gateway's URL, taking turns when there are several (a URL moves when its gateway
   * restarts: PORT=0); null while none is up.
   */
  url(): string | null {
    const urls = [...this.gatewayUrls.values()];
    return urls.length === 0 ? null : urls[this.nextGateway++ % urls.length]!;
  }

  async gateway(name = 'gateway', env: Record<string, string> = {}, options: SpawnOptions = {}) {
    await this.launch({ name, role: 'gateway', kinds: '', env, root: options.root }, 0);
  }

  async workers(name: string, kinds: string, env: Record<string, string> = {}, options: SpawnOptions = {}) {
    await this.launch({ name, role: 'workers', kinds, env, root: options.root }, 0);
  }

  /**
   * Where a live member answers /readyz: a gateway's URL, a worker's own HTTP endpoint (from its
   * line `workers: metrics on <url>`); null when it is not running or has not said yet.
   */
  readyzUrl(name: string): string | null {
    const m = this.members.get(name);
    if (!m || m.proc.exit() !== null) return null;
    if (m.role === 'gateway') {
      const url = this.gatewayUrls.get(name);
      return url ? `${url}/readyz` : null;
    }
    const said = /workers: metrics on (http:\/\/[^\s"\\]+)/.exec(m.proc.output());
    return said ? `${said[1]}/readyz` : null;
  }

  /** Running, and started by the test (not a supervisor restart after a death). */
  alive(name: string): boolean {
    const m = this.members.get(name);
    return !!m && m.proc.exit() === null && !m.supervised;
  }

  /**
   * Takes a gateway out of the rotation without stopping it: what a load balancer does when its
   * pod is deleted, before the preStop pause ends and SIGTERM comes (deploy/k8s/gateway.yaml).
   */
  leaveRotation(name: string) {
    this.gatewayUrls.delete(name);
  }

  /** Sends a signal to a member and waits for its exit (planned: SIGKILL, or SIGTERM that must exit 0). */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<ProcessExit> {
    const m = this.members.get(name)!;
    m.ending = signal;
    if (m.role === 'gateway') this.gatewayUrls.delete(name);
    await m.proc.kill(signal);
    return m.proc.exited;
  }

  /**
   * Starts a member again after the test ended it; `root` given: from that tree from now on
   * (undefined: this checkout), as a rolling upgrade replaces a process by another release's.
   */
  async restart(name: string, options?: SpawnOptions) {
    const m = this.members.get(name)!;
    this.plannedRestarts++;
    await this.launch(options ? { ...m, root: options.root } : m, m.generation + 1);
  }

  /** SIGTERM to every live member; each must exit 0 within the deadline (else SIGKILL, recorded). */
  async stopAll(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.members.values()]
        .filter((m) => m.proc.exit() === null)
        .map(async (m) => {
          m.ending = 'SIGTERM';
          m.proc.child.kill('SIGTERM');
          const done = await Promise.race([m.proc.exited, sleep(scaled(60_000)).then(() => null)]);
          if (!done) {
            m.termTimedOut = true;
            await m.proc.kill('SIGKILL');
          }
        }),
    );
    // Let the exit handlers record the last exits.
    await sleep(10);
    allFleets.delete(this);
  }

  /** Exits the test did not ask for: ended by themselves, or not exit 0 after SIGTERM. */
  unexpectedExits(): ExitRecord[] {
    return this.exits.filter((e) => !e.expected);
  }

  /** The last output of every member that exited unexpectedly (for the failure report). */
  unexpectedOutput(): string {
    return this.unexpectedExits()
      .map(
        (e) =>
          `--- ${e.name}#${e.generation} ${JSON.stringify(e)}\n${(this.outputs.get(`${e.name}#${e.generation}`) ?? '').slice(-3000)}`,
      )
      .join('\n');
  }

  /** Every process's output lines that mention one of the needles (for diagnosis). */
  linesMentioning(needles: string[]): string[] {
    const outputs = new Map(this.outputs);
    for (const m of this.members.values()) outputs.set(`${m.name}#${m.generation}`, m.proc.output());
    return [...outputs].flatMap(([name, text]) =>
      text
        .split('\n')
        .filter((line) => needles.some((n) => line.includes(n)))
        .map((line) => `${name}: ${line.slice(0, 600)}`),
    );
  }

  async kill9All() {
    this.closed = true;
    await Promise.all([...this.members.values()].map((m) => m.proc.kill('SIGKILL')));
    allFleets.delete(this);
  }

  private async launch(spec: MemberSpec, generation: number, supervised = false) {
    const env = { ...this.env, ...spec.env };
    const options = { root: spec.root };
    const proc =
      spec.role === 'gateway'
        ? spawnGateway(this.config, env, options)
        : spawnWorkers(this.config, spec.kinds, env, options);
    const member: Member = {
      name: spec.name,
      role: spec.role,
      kinds: spec.kinds,
      env: spec.env,
      root: spec.root,
      proc,
      generation,
      ending: null,
      termTimedOut: false,
      supervised,
      restarts: this.members.get(spec.name)?.restarts ?? 0,
    };
    this.members.set(spec.name, member);
    void proc.exited.then((exit) => {
      this.outputs.set(`${spec.name}#${generation}`, proc.output());
      const sent = member.termTimedOut ? 'SIGTERM' : member.ending;
      const expected = (sent === 'SIGKILL' && !member.termTimedOut) || (sent === 'SIGTERM' && exit.code === 0);
      this.exits.push({ name: spec.name, generation, ...exit, sentSignal: sent, expected });
      const current = this.members.get(spec.name) === member;
      if (spec.role === 'gateway' && current) this.gatewayUrls.delete(spec.name);
      // Supervisor: what died by itself is started again (a few times at most).
      if (sent === null && current && !this.closed && member.restarts < 5) {
        member.restarts++;
        this.unplannedRestarts++;
        void sleep(1000)
          .then(() => (this.closed ? undefined : this.launch(member, generation + 1, true)))
          .catch(() => undefined);
      }
    });
    if (spec.role === 'gateway') {
      this.gatewayUrls.set(spec.name, await (proc as ReturnType<typeof spawnGateway>).listening(scaled(120_000)));
    } else {
      await (proc as ReturnType<typeof spawnWorkers>).running(scaled(120_000));
    }
  }
}

/** For afterAll: whatever a failed scenario left running is killed. */
export async function killAllFleets() {
  await Promise.all([...allFleets].map((f) => f.kill9All()));
}

// ---------------------------------------------------------------------------------------------
// Load

type Outcome = number | 'network' | 'timeout';
export type Attempt = {
  start: number;
  end: number;
  outcome: Outcome;
  retryAfter: string | null;
  /** The error message of a non-2xx answer (first 120 characters). */
  error?: string;
};
type WriteKind = 'single' | 'batch' | 'job';
export type Write = {
  kind: WriteKind;
  key: string;
  externalId: string | null;
  targets: number;
  started: number;
  attempts: Attempt[];
  /** The first 2xx: what the client was told. */
  ack: { at: number; status: number; id: string; jobNumber: string | null; accepted: number | null } | null;
  path: string;
  payload: string;
  /** A non-retryable answer (4xx other than 429) or given up at the drain deadline. */
  unfinished: Outcome | 'abandoned' | null;
};
export type Read = { kind: 'balances' | 'import-job' | 'health'; attempt: Attempt; bodyStatus: string | null };
export type FaultWindow = { start: number; down: number | null; up: number | null; end: number | null };

const is2xx = (o: Outcome) => typeof o === 'number' && o >= 200 && o < 300;

function percentile(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!);
}

/**
 * Clients of one Integration Client: write lanes post inbound singles, batches (Idempotency-Key)
 * and job creations one after another, retrying 503/429 (after Retry-After, at most 1 s), 5xx and
 * network errors with the same key and body until acknowledged; read lanes GET inventory balances
 * and acknowledged import jobs; a health lane GETs the integration health every second.
 */
export class Load {
  readonly writes: Write[] = [];
  readonly reads: Read[] = [];
  readonly windows: FaultWindow[] = [];
  private running = false;
  private giveUp = false;
  private lanes: Promise<void>[] = [];
  private seq = 0;
  private readonly rnd = mulberry32(11);

  constructor(
    private readonly opts: {
      url: () => string | null;
      apiKey: string;
      sourceSystem: string;
      writeLanes?: number;
      readLanes?: number;
      batchSize?: number;
    },
  ) {}

  start() {
    this.running = true;
    for (let i = 0; i < (this.opts.writeLanes ?? 3); i++) this.lanes.push(this.writeLane());
    for (let i = 0; i < (this.opts.readLanes ?? 2); i++) this.lanes.push(this.readLane());
    this.lanes.push(this.healthLane());
  }

  /** Stops starting requests and waits for the writes in hand (they retry until acknowledged). */
  async stop(drainMs = 120_000) {
    this.running = false;
    const drained = await Promise.race([
      Promise.all(this.lanes).then(() => true),
      sleep(scaled(drainMs)).then(() => false),
    ]);
    if (!drained) {
      this.giveUp = true;
      await Promise.all(this.lanes);
    }
  }

  // Fault windows: start (fault injected), down (dependency known down), up (restart begun), end (back).
  faultStart(): FaultWindow {
    const w: FaultWindow = { start: Date.now(), down: null, up: null, end: null };
    this.windows.push(w);
    return w;
  }
  markDown() {
    this.windows.at(-1)!.down = Date.now();
  }
  markUp() {
    this.windows.at(-1)!.up = Date.now();
  }
  faultEnd() {
    this.windows.at(-1)!.end = Date.now();
  }

  acked(): Write[] {
    return this.writes.filter((w) => w.ack);
  }

  ackedSince(t: number): number {
    return this.writes.filter((w) => w.ack && w.ack.at >= t).length;
  }

  /** Waits for n writes acknowledged at or after `since`; false at the deadline. */
  waitForAcks(n: number, since: number, timeoutMs: number): Promise<boolean> {
    return waitFor(() => this.ackedSince(since) >= n, timeoutMs);
  }

  writeAttempts(from: number, to = Infinity): Attempt[] {
    return this.writes.flatMap((w) => w.attempts).filter((a) => a.start >= from && a.end <= to);
  }

  /** One logical write of the given kind, retried until acknowledged (or refused, or given up). */
  async write(kind: WriteKind, batchSize = this.opts.batchSize ?? 40): Promise<Write> {
    const n = this.seq++;
    const key = randomUUID();
    const prefix = `${this.opts.sourceSystem}-${n}`;
    let path: string;
    let body: unknown;
    let targets = 0;
    let externalId: string | null = null;
    if (kind === 'single') {
      path = '/api/v1/inbound/targets';
      body = { sourceSystem: this.opts.sourceSystem, ...makeTargets(1, prefix, n + 1)[0] };
      targets = 1;
    } else if (kind === 'batch') {
      path = '/api/v1/inbound/targets/batch';
      body = { sourceSystem: this.opts.sourceSystem, targets: makeTargets(batchSize, prefix, n + 1) };
      targets = batchSize;
    } else {
      path = '/api/v1/connect/jobs';
      externalId = `JOB-${prefix}`;
      body = {
        externalId,
        title: `Fault job ${n}`,
        jobType: 'MAINTENANCE',
        customer: { name: 'ACME' },
        site: { address: { line1: 'Main 1', city: 'Berlin', countryCode: 'DE' } },
      };
    }
    const w: Write = {
      kind,
      key,
      externalId,
      targets,
      started: Date.now(),
      attempts: [],
      ack: null,
      path,
      payload: JSON.stringify(body),
      unfinished: null,
    };
    this.writes.push(w);
    for (;;) {
      if (this.giveUp) {
        w.unfinished = 'abandoned';
        return w;
      }
      const { attempt, answer } = await this.send(w);
      w.attempts.push(attempt);
      const o = attempt.outcome;
      if (is2xx(o)) {
        const id = String(kind === 'job' ? answer?.fieldJobId : answer?.importJobId);
        w.ack = {
          at: attempt.end,
          status: o as number,
          id,
          jobNumber: kind === 'job' ? (answer?.jobNumber ?? null) : null,
          accepted: kind === 'job' ? null : (answer?.counts?.accepted ?? null),
        };
        return w;
      }
      if (!(await this.backOff(attempt))) {
        w.unfinished = o;
        return w;
      }
    }
  }

  private send(w: Write): Promise<{ attempt: Attempt; answer: any }> {
    return this.request('POST', w.path, { 'idempotency-key': w.key }, w.payload).then(({ attempt, body }) => ({
      attempt,
      answer: body,
    }));
  }

  /** Waits as a client would before retrying; false when the answer is not worth a retry. */
  private async backOff(attempt: Attempt): Promise<boolean> {
    const o = attempt.outcome;
    if (o === 503 || o === 429) {
      const after = Number(attempt.retryAfter);
      await sleep(Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 500, 1000) + this.rnd() * 100);
      return true;
    }
    if (o === 'network' || o === 'timeout' || (typeof o === 'number' && o >= 500)) {
      await sleep(200 + this.rnd() * 100);
      return true;
    }
    return false;
  }

  /**
   * After the load: sends up to `max` acknowledged writes again, same key and body; each must
   * answer 200 as a replay (idempotentReplay) naming the record of its first answer.
   */
  async replay(max = 100): Promise<{ sent: number; notReplayed: number; otherRecord: number; failures: string[] }> {
    const sample = [...this.acked()].sort(() => this.rnd() - 0.5).slice(0, max);
    const result = { sent: sample.length, notReplayed: 0, otherRecord: 0, failures: [] as string[] };
    const queue = [...sample];
    const deadline = Date.now() + scaled(120_000);
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        for (let w = queue.shift(); w; w = queue.shift()) {
          for (;;) {
            const { attempt, answer } = await this.send(w);
            const o = attempt.outcome;
            if (is2xx(o)) {
              const id = String(w.kind === 'job' ? answer?.fieldJobId : answer?.importJobId);
              if (id !== w.ack!.id) result.otherRecord++;
              if (o !== 200 || answer?.idempotentReplay !== true) result.notReplayed++;
              if (id !== w.ack!.id || o !== 200 || answer?.idempotentReplay !== true)
                result.failures.push(`${w.kind} ${w.key}: ${o} ${id} (first: ${w.ack!.status} ${w.ack!.id})`);
              break;
            }
            if (Date.now() > deadline || !(await this.backOff(attempt))) {
              result.notReplayed++;
              result.failures.push(`${w.kind} ${w.key}: ${o} ${attempt.error ?? ''}`);
              break;
            }
          }
        }
      }),
    );
    return result;
  }

  private async request(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<{ attempt: Attempt; body: any }> {
    const start = Date.now();
    const base = this.opts.url();
    if (!base) {
      await sleep(100);
      return { attempt: { start, end: Date.now(), outcome: 'network', retryAfter: null }, body: null };
    }
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.opts.apiKey}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      let parsed: any = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = null;
      }
      const attempt: Attempt = {
        start,
        end: Date.now(),
        outcome: res.status,
        retryAfter: res.headers.get('retry-after'),
      };
      if (!res.ok) attempt.error = String(parsed?.error?.message ?? text).slice(0, 120);
      return { attempt, body: parsed };
    } catch (err) {
      const timeout = (err as Error).name === 'TimeoutError';
      const cause = (err as Error & { cause?: Error }).cause;
      return {
        attempt: {
          start,
          end: Date.now(),
          outcome: timeout ? 'timeout' : 'network',
          retryAfter: null,
          // What the connection said (fetch's own message is "fetch failed"), for the failure report.
          error: String(cause?.message ?? (err as Error).message).slice(0, 120),
        },
        body: null,
      };
    }
  }

  private async writeLane() {
    while (this.running) {
      const r = this.rnd();
      await this.write(r < 0.4 ? 'single' : r < 0.6 ? 'batch' : 'job');
      await sleep(20);
    }
  }

  private async readLane() {
    let i = 0;
    while (this.running) {
      const imports = i % 2 === 1 ? this.writes.filter((w) => w.ack && w.kind !== 'job') : [];
      const pick = imports[Math.floor(this.rnd() * imports.length)];
      const kind = pick ? 'import-job' : 'balances';
      const path = pick ? `/api/v1/import-jobs/${pick.ack!.id}` : '/api/v1/connect/inventory/balances';
      const { attempt, body } = await this.request('GET', path);
      this.reads.push({ kind, attempt, bodyStatus: body?.status ?? null });
      i++;
      await sleep(50);
    }
  }

  private async healthLane() {
    while (this.running) {
      const { attempt, body } = await this.request('GET', '/api/v1/integration/health');
      this.reads.push({ kind: 'health', attempt, bodyStatus: typeof body?.status === 'string' ? body.status : null });
      await sleep(1000);
    }
  }

  // ---- figures

  private inWindow(t: number) {
    return this.windows.some((w) => t >= w.start && t <= (w.end ?? Infinity));
  }

  counts() {
    const attempts = [...this.writes.flatMap((w) => w.attempts), ...this.reads.map((r) => r.attempt)];
    const count = (f: (a: Attempt) => boolean) => attempts.filter(f).length;
    const writeAttempts = this.writes.flatMap((w) => w.attempts);
    return {
      status503: count((a) => a.outcome === 503),
      write503WithoutRetryAfter: writeAttempts.filter((a) => a.outcome === 503 && !a.retryAfter).length,
      status429: count((a) => a.outcome === 429),
      otherNon2xx: count(
        (a) => typeof a.outcome === 'number' && !is2xx(a.outcome) && a.outcome !== 503 && a.outcome !== 429,
      ),
      otherStatuses: [
        ...new Set(
          attempts
            .filter((a) => typeof a.outcome === 'number' && !is2xx(a.outcome) && a.outcome !== 503 && a.outcome !== 429)
            .map((a) => `${a.outcome} ${a.error ?? ''}`.trim()),
        ),
      ],
      networkErrors: count((a) => a.outcome === 'network'),
      timeouts: count((a) => a.outcome === 'timeout'),
      unfinishedWrites: this.writes.filter((w) => w.unfinished !== null).length,
    };
  }

  /** Fault end → first 2xx write answered after it, per fault window (ms; null: none). */
  recoveries(): (number | null)[] {
    return this.windows.map((w) => {
      if (w.end === null) return null;
      const firsts = this.writes
        .flatMap((x) => x.attempts)
        .filter((a) => is2xx(a.outcome) && a.end >= w.end!)
        .map((a) => a.end);
      return firsts.length ? Math.min(...firsts) - w.end : null;
    });
  }

  figures(name: string, fleet: Fleet): string {
    const c = this.counts();
    const acked = this.acked();
    const kinds = (k: WriteKind) => acked.filter((w) => w.kind === k);
    const answered = this.reads.filter((r) => r.kind !== 'health' && typeof r.attempt.outcome === 'number');
    const latency = (rs: Read[]) => rs.map((r) => r.attempt.end - r.attempt.start);
    const firstFault = this.windows[0]?.start ?? Infinity;
    const before = latency(answered.filter((r) => r.attempt.start < firstFault));
    const during = latency(answered.filter((r) => this.inWindow(r.attempt.start)));
    const write503During = this.writes
      .flatMap((w) => w.attempts)
      .filter((a) => a.outcome === 503 && this.inWindow(a.start))
      .map((a) => a.end - a.start);
    const health = new Map<string, number>();
    for (const r of this.reads.filter((x) => x.kind === 'health' && this.inWindow(x.attempt.start))) {
      const k = `${r.attempt.outcome}${r.bodyStatus ? ` ${r.bodyStatus}` : ''}`;
      health.set(k, (health.get(k) ?? 0) + 1);
    }
    const ms = (v: number | null) => (v === null ? '-' : String(v));
    const all503 = [...this.writes.flatMap((w) => w.attempts), ...this.reads.map((r) => r.attempt)].filter(
      (a) => a.outcome === 503,
    );
    const byPhase = { before: 0, during: 0, after: 0 };
    for (const a of all503) byPhase[a.start < firstFault ? 'before' : this.inWindow(a.start) ? 'during' : 'after']++;
    const reasons = new Map<string, number>();
    for (const a of all503) reasons.set(a.error ?? '', (reasons.get(a.error ?? '') ?? 0) + 1);
    return (
      `faults[${name}]: recovery ${this.recoveries().map(ms).join('/')} ms | ` +
      `writes acked ${acked.length} (single ${kinds('single').length}, batch ${kinds('batch').length} = ` +
      `${acked.reduce((n, w) => n + w.targets, 0)} targets, jobs ${kinds('job').length}), unfinished ${c.unfinishedWrites} | ` +
      `503s ${c.status503} (before ${byPhase.before}, during ${byPhase.during}, after ${byPhase.after}; ` +
      `writes without Retry-After ${c.write503WithoutRetryAfter}; ${[...reasons].map(([k, v]) => `${v}× "${k}"`).join(', ')}), ` +
      `429s ${c.status429}, ` +
      `other non-2xx ${c.otherNon2xx}${c.otherStatuses.length ? ` [${c.otherStatuses.join(',')}]` : ''}, ` +
      `network errors ${c.networkErrors}, timeouts ${c.timeouts} | ` +
      `read p50/p99 before ${ms(percentile(before, 0.5))}/${ms(percentile(before, 0.99))} ms, ` +
      `during ${ms(percentile(during, 0.5))}/${ms(percentile(during, 0.99))} ms | ` +
      `write 503 p50/p99 during ${ms(percentile(write503During, 0.5))}/${ms(percentile(write503During, 0.99))} ms | ` +
      `health during {${[...health].map(([k, v]) => `${k}: ${v}`).join(', ')}} | ` +
      `restarts ${fleet.plannedRestarts} planned, ${fleet.unplannedRestarts} unplanned; ` +
      `unexpected exits ${fleet.unexpectedExits().length}`
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Oracle

/** Waits until no import job of the tenant is Queued/Processing and every job request is settled. */
export function converge(pool: pg.Pool, tenantId: string, timeoutMs = 150_000): Promise<boolean> {
  return waitFor(async () => {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*)::int FROM import_jobs WHERE tenant_id = $1 AND status IN ('Queued', 'Processing')) AS imports,
              (SELECT count(*)::int FROM job_requests
                WHERE tenant_id = $1 AND materialized_at IS NULL AND failed_at IS NULL) AS jobs`,
      [tenantId],
    );
    return rows[0].imports === 0 && rows[0].jobs === 0;
  }, timeoutMs);
}

const jobNumberValue = (n: string | null) => Number(/^J-(\d+)$/.exec(n ?? '')?.[1] ?? NaN);

/**
 * Every acknowledged write against the database: what the client was told must be there exactly
 * once and be done; nothing else may be there. Returns counts; `expectedOracle` says what they must be.
 */
export async function oracle(pool: pg.Pool, load: Load, tenantId: string, sourceSystem: string) {
  const acked = load.acked();
  const ackedImports = acked.filter((w) => w.kind !== 'job');
  const ackedJobs = acked.filter((w) => w.kind === 'job');
  const importsById = new Map(ackedImports.map((w) => [w.ack!.id, w]));
  const jobsById = new Map(ackedJobs.map((w) => [w.ack!.id, w]));

  const { rows: importRows } = await pool.query(
    `SELECT id::text, idempotency_key, status, accepted_count, applied_count, failed_count, chunk_count, chunks_done,
            (SELECT count(*)::int FROM import_job_chunks c WHERE c.import_job_id = j.id) AS chunks
       FROM import_jobs j WHERE tenant_id = $1`,
    [tenantId],
  );
  const importsInDb = new Map(importRows.map((r) => [r.id as string, r]));
  const keysInDb = new Map<string, number>();
  for (const r of importRows) keysInDb.set(r.idempotency_key, (keysInDb.get(r.idempotency_key) ?? 0) + 1);
  let missing = 0;
  let notCompleted = 0;
  let appliedNotAccepted = 0;
  let keyMismatch = 0;
  let chunksMissing = 0;
  for (const [id, w] of importsById) {
    const row = importsInDb.get(id);
    if (!row) {
      missing++;
      continue;
    }
    if (row.idempotency_key !== `header:${w.key}`) keyMismatch++;
    if (row.status !== 'Completed') notCompleted++;
    if (row.applied_count !== row.accepted_count || row.accepted_count !== w.ack!.accepted || row.failed_count !== 0)
      appliedNotAccepted++;
    if (row.chunks !== row.chunk_count || row.chunks_done !== row.chunk_count) chunksMissing++;
  }
  const { rows: targetRows } = await pool.query(
    `SELECT count(*)::int AS n,
            count(*) FILTER (WHERE NOT (last_import_job_id::text = ANY($3::text[])))::int AS foreign
       FROM targets WHERE tenant_id = $1 AND source_system = $2`,
    [tenantId, sourceSystem, [...importsById.keys()]],
  );

  const { rows: jobRows } = await pool.query(
    `SELECT r.field_job_id::text AS id, r.idempotency_key, r.job_number AS request_number, r.materialized_at,
            r.failed_at, j.id AS field_job, j.job_number,
            (SELECT count(*)::int FROM work_orders w WHERE w.field_job_id = r.field_job_id) AS work_orders
       FROM job_requests r LEFT JOIN field_jobs j ON j.id = r.field_job_id WHERE r.tenant_id = $1`,
    [tenantId],
  );
  const { rows: fieldJobCount } = await pool.query(
    `SELECT count(*)::int AS n, count(DISTINCT job_number)::int AS numbers FROM field_jobs WHERE tenant_id = $1`,
    [tenantId],
  );
  const jobsInDb = new Map(jobRows.map((r) => [r.id as string, r]));
  let jobsMissing = 0;
  let notMaterialised = 0;
  let numberMismatch = 0;
  let jobKeyMismatch = 0;
  let workOrdersWrong = 0;
  for (const [id, w] of jobsById) {
    const row = jobsInDb.get(id);
    if (!row) {
      jobsMissing++;
      continue;
    }
    if (row.idempotency_key !== `header:${w.key}`) jobKeyMismatch++;
    if (!row.field_job || !row.materialized_at || row.failed_at) notMaterialised++;
    if (row.request_number !== w.ack!.jobNumber || (row.field_job && row.job_number !== w.ack!.jobNumber))
      numberMismatch++;
    if (row.work_orders !== 1) workOrdersWrong++;
  }
  // Increasing: a job acknowledged before another was first asked for has the smaller number.
  const byAck = [...ackedJobs].sort((a, b) => a.ack!.at - b.ack!.at);
  const prefixMax: number[] = [];
  for (const w of byAck) prefixMax.push(Math.max(prefixMax.at(-1) ?? -Infinity, jobNumberValue(w.ack!.jobNumber)));
  let notIncreasing = 0;
  for (const w of ackedJobs) {
    let lo = 0;
    let hi = byAck.length; // first index acked at or after w.started
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byAck[mid]!.ack!.at < w.started) lo = mid + 1;
      else hi = mid;
    }
    const earlierMax = lo > 0 ? prefixMax[lo - 1]! : -Infinity;
    if (!(jobNumberValue(w.ack!.jobNumber) > earlierMax)) notIncreasing++;
  }

  const { rows: stuck } = await pool.query(
    `SELECT (SELECT count(*)::int FROM import_jobs WHERE tenant_id = $1 AND status IN ('Queued', 'Processing')) AS imports,
            (SELECT count(*)::int FROM job_requests r WHERE tenant_id = $1
                AND NOT EXISTS (SELECT 1 FROM field_jobs j WHERE j.id = r.field_job_id)) AS jobs`,
    [tenantId],
  );
  const c = load.counts();
  return {
    importJobs: {
      acknowledged: importsById.size,
      inDatabase: importRows.length,
      missing,
      unexpected: importRows.filter((r) => !importsById.has(r.id)).length,
      keysWithSeveralJobs: [...keysInDb.values()].filter((n) => n > 1).length,
      keyMismatch,
      notCompleted,
      appliedNotAccepted,
      chunksMissing,
    },
    targets: {
      acknowledged: ackedImports.reduce((n, w) => n + w.targets, 0),
      inDatabase: targetRows[0].n as number,
      fromUnacknowledgedJobs: targetRows[0].foreign as number,
    },
    jobs: {
      acknowledged: jobsById.size,
      requests: jobRows.length,
      fieldJobs: fieldJobCount[0].n as number,
      missing: jobsMissing,
      unexpected: jobRows.filter((r) => !jobsById.has(r.id)).length,
      keyMismatch: jobKeyMismatch,
      notMaterialised,
      workOrdersNotOne: workOrdersWrong,
      numberMismatch,
      duplicateNumbers: (fieldJobCount[0].n as number) - (fieldJobCount[0].numbers as number),
      notIncreasing,
    },
    stuck: { importJobs: stuck[0].imports as number, jobRequestsWithoutFieldJob: stuck[0].jobs as number },
    unfinishedWrites: c.unfinishedWrites,
  };
}

export type OracleResult = Awaited<ReturnType<typeof oracle>>;

/** What the oracle must find: every acknowledged write exactly once, done; nothing else. */
export function expectedOracle(load: Load): OracleResult {
  const acked = load.acked();
  const imports = acked.filter((w) => w.kind !== 'job');
  const jobs = acked.filter((w) => w.kind === 'job');
  const targets = imports.reduce((n, w) => n + w.targets, 0);
  return {
    importJobs: {
      acknowledged: imports.length,
      inDatabase: imports.length,
      missing: 0,
      unexpected: 0,
      keysWithSeveralJobs: 0,
      keyMismatch: 0,
      notCompleted: 0,
      appliedNotAccepted: 0,
      chunksMissing: 0,
    },
    targets: { acknowledged: targets, inDatabase: targets, fromUnacknowledgedJobs: 0 },
    jobs: {
      acknowledged: jobs.length,
      requests: jobs.length,
      fieldJobs: jobs.length,
      missing: 0,
      unexpected: 0,
      keyMismatch: 0,
      notMaterialised: 0,
      workOrdersNotOne: 0,
      numberMismatch: 0,
      duplicateNumbers: 0,
      notIncreasing: 0,
    },
    stuck: { importJobs: 0, jobRequestsWithoutFieldJob: 0 },
    unfinishedWrites: 0,
  };
}

/**
 * Where the messages keyed by these ids are (topic/partition/offset and producedAt relative to
 * now): read from the beginning by a group of its own for a while (diagnosis only).
 */
async function messagesByKey(config: Config, keys: string[], readMs = 15_000): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const wanted = new Set(keys);
  const bus = createKafkaBus({
    brokers: config.kafka.brokers,
    clientId: `fault-diagnosis-${randomBytes(3).toString('hex')}`,
    logger: createLogger('silent', 'fault-diagnosis'),
  });
  try {
    const group = bus.consumerGroup(`${config.kafka.topicPrefix}diagnosis-${randomBytes(3).toString('hex')}`);
    const names = topicNames(config.kafka);
    await withDeadline(
      group.run(
        [names.jobs, names.inboundTargets, names.inboundTargetsExpress],
        reading((messages) => {
          for (const m of messages) {
            if (!m.key || !wanted.has(m.key)) continue;
            let producedAt = '';
            try {
              producedAt = JSON.parse(String(m.value)).producedAt ?? '';
            } catch {
              // not JSON
            }
            const list = found.get(m.key) ?? [];
            list.push(
              `${m.topic.slice(config.kafka.topicPrefix.length)}/${m.partition}/${m.offset}(producedAt ${producedAt})`,
            );
            found.set(m.key, list);
          }
        }),
      ),
      scaled(30_000),
    );
    await sleep(scaled(readMs));
    await withDeadline(group.stop(), scaled(30_000));
  } catch (err) {
    found.set('(error)', [String(err)]);
  } finally {
    await withDeadline(bus.close(), scaled(30_000)).catch(() => undefined);
  }
  return found;
}

const withDeadline = <T>(p: Promise<T>, ms: number): Promise<T | undefined> =>
  Promise.race([p, sleep(ms).then(() => undefined)]);

/**
 * For a failed oracle: the acknowledged writes that did not end as answered, each with its
 * attempts (ms after the first fault), its rows' state and every process log line naming it.
 */
export async function diagnose(pool: pg.Pool, load: Load, fleet: Fleet, tenantId: string): Promise<string> {
  const t0 = load.windows[0]?.start ?? 0;
  const { rows: imports } = await pool.query(
    `SELECT id::text, idempotency_key, status, accepted_count, applied_count, chunk_count, chunks_done,
            created_at, updated_at
       FROM import_jobs WHERE tenant_id = $1 AND (status <> 'Completed' OR applied_count <> accepted_count)`,
    [tenantId],
  );
  const { rows: jobs } = await pool.query(
    `SELECT r.field_job_id::text AS id, r.idempotency_key, r.job_number, r.created_at, r.materialized_at, r.failed_at,
            r.failure_reason, (SELECT count(*)::int FROM field_jobs j WHERE j.id = r.field_job_id) AS field_jobs
       FROM job_requests r WHERE tenant_id = $1 AND (materialized_at IS NULL OR failed_at IS NOT NULL
         OR NOT EXISTS (SELECT 1 FROM field_jobs j WHERE j.id = r.field_job_id))`,
    [tenantId],
  );
  const acked = new Map(load.acked().map((w) => [w.ack!.id, w]));
  const missing = load
    .acked()
    .filter((w) => ![...imports, ...jobs].some((r) => r.id === w.ack!.id))
    .map((w) => w.ack!.id);
  const describe = (row: any) => {
    const w = acked.get(row.id);
    const attempts = (w?.attempts ?? []).map((a) => `${a.outcome}@${a.start - t0}..${a.end - t0}`).join(' ');
    const times = Object.entries(row)
      .filter(([, v]) => v instanceof Date)
      .map(([k, v]) => `${k}=${(v as Date).getTime() - t0}`)
      .join(' ');
    const messages = inKafka.get(row.id)?.join(' ') || 'none found';
    return (
      `  ${JSON.stringify({ ...row, created_at: undefined, updated_at: undefined, materialized_at: undefined })} ${times}\n` +
      `    attempts: ${attempts || '(not acknowledged)'}\n    messages in Kafka: ${messages}`
    );
  };
  const ids = [...imports, ...jobs].map((r) => r.id as string);
  const inKafka =
    ids.length + missing.length > 0
      ? await messagesByKey(fleet.config, [...ids, ...missing])
      : new Map<string, string[]>();
  const windows = load.windows.map((w) =>
    Object.entries(w)
      .map(([k, v]) => `${k}=${v === null ? '-' : (v as number) - t0}`)
      .join(' '),
  );
  return [
    `fault windows (ms after the first fault): ${windows.join(' | ')}`,
    `import jobs not completed as answered: ${imports.length}`,
    ...imports.map(describe),
    `job requests not materialised: ${jobs.length}`,
    ...jobs.map(describe),
    `acknowledged ids missing from the database: ${missing.map((id) => `${id} (in Kafka: ${inKafka.get(id)?.join(' ') ?? 'none found'})`).join(', ') || 'none'}`,
    ...(inKafka.has('(error)') ? [`reading Kafka failed: ${inKafka.get('(error)')}`] : []),
    'process log lines naming them:',
    ...fleet.linesMentioning([...ids, ...missing]).slice(0, 60),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Scenario skeleton

export type Scenario = {
  name: string;
  pool: pg.Pool;
  config: Config;
  demo: Demo;
  fleet: Fleet;
  load: Load;
  sourceSystem: string;
};

/**
 * A demo tenant, a gateway and the given worker processes on the given database and brokers,
 * and the load running against them.
 */
export async function startScenario(options: {
  name: string;
  pool: pg.Pool;
  databaseUrl: string;
  brokers: string;
  /** Worker processes by name → WORKERS. */
  workers: Record<string, string>;
  env?: Record<string, string>;
  load?: { writeLanes?: number; readLanes?: number; batchSize?: number };
  /** Start the load now (default) or leave it to the scenario. */
  startLoad?: boolean;
  /** Gateway processes by name (default one, `gateway`); requests take turns across them. */
  gateways?: string[];
  /** The tree every process runs from (SpawnOptions.root; default this checkout). */
  root?: string;
}): Promise<Scenario> {
  const config = faultConfig(options.databaseUrl, options.brokers, options.env);
  const demo = await createDemo(options.pool);
  const fleet = new Fleet(config, { ...faultEnv, ...options.env });
  const from = { root: options.root };
  await Promise.all([
    ...(options.gateways ?? ['gateway']).map((name) => fleet.gateway(name, {}, from)),
    ...Object.entries(options.workers).map(([name, kinds]) => fleet.workers(name, kinds, {}, from)),
  ]);
  const sourceSystem = `fault-${options.name}`;
  const load = new Load({
    url: () => fleet.url(),
    apiKey: demo.clients.all!.apiKey,
    sourceSystem,
    ...options.load,
  });
  if (options.startLoad !== false) load.start();
  return { name: options.name, pool: options.pool, config, demo, fleet, load, sourceSystem };
}

export type ScenarioReport = {
  figures: string;
  oracle: OracleResult & { replays: Awaited<ReturnType<Load['replay']>> };
  expected: OracleResult & { replays: Awaited<ReturnType<Load['replay']>> };
  converged: boolean;
  counts: ReturnType<Load['counts']>;
  unexpectedExits: { name: string; code: number | null; signal: NodeJS.Signals | null; sentSignal: string | null }[];
};

/**
 * Stops the load (waiting for the writes in hand), waits for the workers to settle, runs the
 * oracle, stops every process with SIGTERM (each must exit 0) and prints the figures line.
 */
export async function finishScenario(s: Scenario): Promise<ScenarioReport> {
  await s.load.stop();
  const replays = await s.load.replay();
  const converged = await converge(s.pool, s.demo.tenantId);
  const result = { ...(await oracle(s.pool, s.load, s.demo.tenantId, s.sourceSystem)), replays };
  const expected = { ...expectedOracle(s.load), replays: { ...replays, notReplayed: 0, otherRecord: 0, failures: [] } };
  await s.fleet.stopAll();
  if (!isDeepStrictEqual(result, expected)) {
    console.log(`faults[${s.name}]: oracle mismatch\n${await diagnose(s.pool, s.load, s.fleet, s.demo.tenantId)}`);
  }
  const figures =
    `${s.load.figures(s.name, s.fleet)} | replayed ${replays.sent} acknowledged writes: ` +
    `${replays.notReplayed} not answered as a replay, ${replays.otherRecord} naming another record`;
  console.log(figures);
  const unexpected = s.fleet.unexpectedExits();
  if (unexpected.length > 0) console.log(`faults[${s.name}]: unexpected exits\n${s.fleet.unexpectedOutput()}`);
  return {
    figures,
    oracle: result,
    expected,
    converged,
    counts: s.load.counts(),
    unexpectedExits: unexpected.map((e) => ({
      name: `${e.name}#${e.generation}`,
      code: e.code,
      signal: e.signal,
      sentSignal: e.sentSignal,
    })),
  };
}
