// Small numeric helpers shared by the inbound benchmark's processes.

export type Percentiles = { p50: number; p95: number; p99: number; max: number };

/** Nearest-rank percentiles of latencies in ms (NaN when empty). */
export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted.at(-1) ?? Number.NaN };
}

export const round = (n: number, digits = 1) => (Number.isFinite(n) ? Number(n.toFixed(digits)) : n);

/** Runs `count` jobs with `concurrency` loops; each loop takes the next index until none is left or the deadline passed. */
export async function runLoops(
  count: number,
  concurrency: number,
  deadline: number,
  job: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (;;) {
        const index = next++;
        if (index >= count || Date.now() > deadline) return;
        await job(index);
      }
    }),
  );
}

/** The one line a benchmark child process prints with its result (the parent looks for this prefix). */
export const resultPrefix = 'BENCH_RESULT ';
