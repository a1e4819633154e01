/**
 * A line a supervisor waits for (scripts/stack, the tests, the benchmarks: "gateway: listening
 * on <url>", "workers: running …"). It is JSON like every other line of the process's output, so
 * log files hold JSON only, and it is written whatever LOG_LEVEL says.
 */
export function announce(service: string, message: string, fields: Record<string, string> = {}): void {
  const line = { level: 30, time: new Date().toISOString(), pid: process.pid, service, ...fields, msg: message };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
