import { createHash } from 'node:crypto';
import os from 'node:os';

// Test timeouts scale with the machine: a loaded CI host (other processes on the same two cores)
// gets proportionally longer deadlines instead of failing by luck. vitest.config.ts measures the
// factor once per run and hands it to the test processes in TEST_TIME_SCALE.

/** What the calibration workload takes on an idle 2-core development machine. */
const referenceMs = 40;

function calibrationMs(): number {
  const buffer = Buffer.alloc(1 << 20, 7);
  const runs: number[] = [];
  for (let run = 0; run < 5; run++) {
    const started = performance.now();
    let sink = 0;
    for (let i = 0; i < 40; i++) sink += createHash('sha256').update(buffer).digest()[0]!;
    for (let i = 0; i < 3e6; i++) sink += Math.sqrt(i);
    runs.push(performance.now() - started + (sink < 0 ? 1 : 0));
  }
  return runs.sort((a, b) => a - b)[2]!; // the median
}

/** How much slower than the reference this machine is right now: 1 … 5. */
export function measureTimeScale(): number {
  const cpu = calibrationMs() / referenceMs;
  const load = os.loadavg()[0]! / Math.max(1, os.availableParallelism());
  return Math.round(Math.min(5, Math.max(1, cpu, load)) * 100) / 100;
}

/** The factor measured for this run (1 outside vitest). */
export const timeScale = (): number => Number(process.env.TEST_TIME_SCALE) || 1;

/** A deadline in ms for this machine: the idle-machine figure times the measured factor. */
export const scaled = (ms: number): number => Math.round(ms * timeScale());
