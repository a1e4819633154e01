// Peak resident memory of a bench's processes (issue 31): every benchmark prints each process's
// peak beside its figures. VmHWM is reset at a phase's start where Linux allows it (clear_refs);
// elsewhere the largest of 50 ms samples of VmRSS counts.
import { readMemory, resetPeak, sampleMemory } from './processes.js';
import { round } from './stats.js';

export type PeakRss = { peakRssMiB: number; from: 'VmHWM' | 'sampled VmRSS'; alive: boolean };

/** Starts watching the named processes; stop() returns each one's peak since then, in MiB. */
export function watchPeaks(pids: Record<string, number>) {
  const watched = Object.entries(pids).map(([name, pid]) => ({
    name,
    pid,
    reset: resetPeak(pid),
    sampler: sampleMemory(pid),
  }));
  return {
    stop(): Record<string, PeakRss> {
      return Object.fromEntries(
        watched.map(({ name, pid, reset, sampler }) => {
          const m = sampler.stop();
          const alive = readMemory(pid) !== null;
          const peak = reset && alive ? Math.max(m.peakHwmMiB, m.maxSampledRssMiB) : m.maxSampledRssMiB;
          return [name, { peakRssMiB: round(peak, 0), from: reset && alive ? 'VmHWM' : 'sampled VmRSS', alive }];
        }),
      );
    },
  };
}

/** One line: `gateway 412, workers-inbound 198 MiB` (a process that is gone is marked so). */
export const peaksLine = (peaks: Record<string, PeakRss>) =>
  `${Object.entries(peaks)
    .map(([name, p]) => `${name} ${p.peakRssMiB}${p.alive ? '' : ' (GONE)'}`)
    .join(', ')} MiB`;
