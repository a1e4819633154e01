import { readFileSync } from 'node:fs';

/** cgroup v2, then v1: the files that hold the container's memory limit. */
const limitFiles = ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes'];

/** Values at or past this mean "no limit" (v1 writes a page-rounded 2^63 - 1, v2 writes `max`). */
const unlimited = 2 ** 60;

/**
 * The memory limit of the container this process runs in (Kubernetes `limits.memory`, compose
 * `mem_limit`), in bytes, or null when none is set or the files are not there (not Linux, or no
 * cgroup namespace).
 */
export function containerMemoryLimit(files: readonly string[] = limitFiles): number | null {
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch {
      continue;
    }
    const bytes = Number(text);
    return Number.isSafeInteger(bytes) && bytes > 0 && bytes < unlimited ? bytes : null;
  }
  return null;
}

/** GATEWAY_MEMORY_BUDGET_BYTES resolved: bytes, or null when off (auto without a container limit). */
export function resolveMemoryBudget(setting: number | 'auto' | 'off', limit = containerMemoryLimit): number | null {
  if (setting === 'off') return null;
  return setting === 'auto' ? limit() : setting;
}
