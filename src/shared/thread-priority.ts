import { setPriority } from 'node:os';

/**
 * Lowers the calling worker thread's CPU priority (nice 10). On Linux a nice value belongs to a
 * thread, so the event loop's thread keeps its own: when cores are short, answering requests
 * (every client's, /livez included) goes before bulk work such as parsing or encoding a large
 * batch. Elsewhere it may apply to the whole process, so only worker threads call it; where it
 * is not allowed it does nothing.
 */
export function yieldCpuToEventLoop(): void {
  try {
    setPriority(10);
  } catch {
    // not permitted here: run at normal priority
  }
}
