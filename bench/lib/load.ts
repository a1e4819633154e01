// Load generator of bench/inbound.ts, run as its own process (`node --import tsx bench/lib/load.ts`)
// so the gateway's CPU and memory are its own. Bounded in count (batches) and time (maxSeconds,
// per-request timeoutMs). Bodies are built before the clock starts; keep-alive connections, one
// per concurrent client. Parameters come as JSON in BENCH_LOAD_PARAMS; the result is one line
// `BENCH_RESULT {json}` on stdout.
import http from 'node:http';
import { batchBody, batchTargets, benchSourceSystem } from './batches.js';
import { percentiles, resultPrefix, round, runLoops } from './stats.js';

export type LoadParams = {
  url: string;
  apiKey: string;
  runId: string;
  /** 'throughput': distinct batches (every target a new row); 'probe': one target list, distinct batch ids. */
  mode: 'throughput' | 'probe';
  /** What each request is (default batch): a batch push, a one-target push (POST /api/v1/inbound/targets), or GET /livez. */
  endpoint?: 'batch' | 'single' | 'livez';
  tag: string;
  /** Appended to every externalBatchId: the same targets as another run of the same tag, as new batches (updates). */
  batchIdSuffix?: string;
  batches: number;
  warmupBatches: number;
  /**
   * After the warm-up, print `load: warm` and wait for a line on stdin before the measured part,
   * so the caller can start its CPU accounting there (thread start-up and JIT are not per target).
   */
  holdAfterWarmup?: boolean;
  batchSize: number;
  concurrency: number;
  maxSeconds: number;
  timeoutMs: number;
};

export type LoadResult = {
  mode: LoadParams['mode'];
  requests: number;
  statuses: Record<string, number>;
  /** 503/429 answers that carried a Retry-After header. */
  retryAfter: number;
  retryAfterValues: string[];
  errors: number;
  errorSamples: string[];
  acceptedTargets: number;
  seconds: number;
  targetsPerSecond: number;
  requestsPerSecond: number;
  bodyBytesAvg: number;
  /** Latency of 200 answers (ms). */
  latencyMs: ReturnType<typeof percentiles>;
  /** Latency of every answer, whatever the status (ms). */
  latencyAllMs: ReturnType<typeof percentiles>;
  warmup: { requests: number; ok: number; seconds: number };
  /** CPU seconds this process used in the measured part. */
  cpuSeconds: number;
};

type Answer = { status: number; body: string; retryAfter: string | undefined; ms: number };

/** A POST of body, or a GET when body is null. */
function post(agent: http.Agent, url: URL, apiKey: string, body: Buffer | null, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      url,
      {
        method: body ? 'POST' : 'GET',
        agent,
        headers: body
          ? {
              authorization: `Bearer ${apiKey}`,
              'content-type': 'application/json',
              'content-length': body.length,
              accept: 'application/json',
            }
          : { accept: 'application/json' },
        timeout: timeoutMs,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(parts).toString('utf8'),
            retryAfter: res.headers['retry-after'],
            ms: performance.now() - started,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

async function main() {
  const p = JSON.parse(process.env.BENCH_LOAD_PARAMS ?? '') as LoadParams;
  const endpoint = p.endpoint ?? 'batch';
  const paths = { batch: '/api/v1/inbound/targets/batch', single: '/api/v1/inbound/targets', livez: '/livez' };
  const url = new URL(paths[endpoint], p.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: p.concurrency });

  // Bodies first, outside the clock.
  const sharedJson = p.mode === 'probe' ? JSON.stringify(batchTargets(p.runId, p.tag, 0, p.batchSize)) : '';
  const build = (tag: string, i: number): Buffer | null =>
    endpoint === 'livez'
      ? null
      : endpoint === 'single'
        ? Buffer.from(JSON.stringify({ sourceSystem: benchSourceSystem, ...batchTargets(p.runId, tag, i, 1)[0] }))
        : batchBody(
            `${p.runId}-${tag}${i}${p.batchIdSuffix ?? ''}`,
            p.mode === 'probe' ? sharedJson : JSON.stringify(batchTargets(p.runId, tag, i, p.batchSize)),
          );
  const warm = Array.from({ length: p.warmupBatches }, (_, i) => build(`${p.tag}w`, i));
  const bodies = Array.from({ length: p.batches }, (_, i) => build(p.tag, i));
  process.stdout.write(`load: ${bodies.length} bodies ready\n`);

  const send = (body: Buffer | null) => post(agent, url, p.apiKey, body, p.timeoutMs);

  // Warm-up: connections, JIT, the gateway's Kafka producer and topic metadata.
  const warmStart = performance.now();
  let warmOk = 0;
  await runLoops(warm.length, p.concurrency, Date.now() + p.maxSeconds * 1000, async (i) => {
    const a = await send(warm[i]!).catch(() => null);
    if (a?.status === 200) warmOk++;
  });
  const warmSeconds = (performance.now() - warmStart) / 1000;
  if (p.holdAfterWarmup) {
    process.stdout.write('load: warm\n');
    await new Promise<void>((resolve, reject) => {
      process.stdin.once('data', () => resolve());
      process.stdin.once('end', () => reject(new Error('load: stdin ended before the go after the warm-up')));
    });
    process.stdin.pause();
  }

  const statuses: Record<string, number> = {};
  const okLatencies: number[] = [];
  const allLatencies: number[] = [];
  const retryAfterValues = new Set<string>();
  const errorSamples: string[] = [];
  let retryAfter = 0;
  let errors = 0;
  let accepted = 0;
  let requests = 0;
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await runLoops(bodies.length, p.concurrency, Date.now() + p.maxSeconds * 1000, async (i) => {
    requests++;
    let a: Answer;
    try {
      a = await send(bodies[i]!);
    } catch (err) {
      errors++;
      if (errorSamples.length < 5) errorSamples.push((err as Error).message);
      return;
    }
    statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    allLatencies.push(a.ms);
    if (a.retryAfter !== undefined) {
      retryAfter++;
      retryAfterValues.add(a.retryAfter);
    }
    if (a.status === 200) {
      okLatencies.push(a.ms);
      if (endpoint !== 'livez') accepted += (JSON.parse(a.body) as { counts: { accepted: number } }).counts.accepted;
    } else if (errorSamples.length < 5 && a.status !== 503) {
      errorSamples.push(`${a.status} ${a.body.slice(0, 300)}`);
    }
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();

  const result: LoadResult = {
    mode: p.mode,
    requests,
    statuses,
    retryAfter,
    retryAfterValues: [...retryAfterValues],
    errors,
    errorSamples,
    acceptedTargets: accepted,
    seconds: round(seconds, 3),
    targetsPerSecond: round(accepted / seconds),
    requestsPerSecond: round(requests / seconds, 2),
    bodyBytesAvg: Math.round(bodies.reduce((s, b) => s + (b?.length ?? 0), 0) / Math.max(1, bodies.length)),
    latencyMs: mapValues(percentiles(okLatencies)),
    latencyAllMs: mapValues(percentiles(allLatencies)),
    warmup: { requests: warm.length, ok: warmOk, seconds: round(warmSeconds, 3) },
    cpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
  };
  process.stdout.write(`${resultPrefix}${JSON.stringify(result)}\n`);
}

const mapValues = <T extends Record<string, number>>(o: T): T =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round(v, 1)])) as T;

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`load: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
