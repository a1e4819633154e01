import { writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Marks the calling worker thread as bulk work: names it (Linux shows the name in `top -H`,
 * `ps -L` and /proc/<pid>/task/<tid>/comm, so an operator and the benchmarks can tell the
 * gateway's threads apart; at most 15 bytes) and lowers its CPU priority (nice 10). On Linux a
 * nice value belongs to a thread, so the event loop's thread keeps its own: when cores are short,
 * answering requests (every client's, /livez included) goes before bulk work such as parsing or
 * encoding a large batch. Elsewhere it may apply to the whole process, so only worker threads
 * call it; where either is not allowed it does nothing.
 */
export function startBulkThread(name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15)); // the calling thread's own entry
  } catch {
    // not Linux, or not permitted: the thread keeps its inherited name
  }
  try {
    setPriority(10);
  } catch {
    // not permitted here: run at normal priority
  }
}
