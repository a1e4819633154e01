// Read endpoints timed one request at a time (bench/growth.ts): what one request costs, not the
// gateway's throughput. Each path gets a warm-up (JIT, caches) before its measured requests.
import { percentiles, type Percentiles } from './stats.js';

export type Answer = { status: number; ms: number };
export type ReadFigures = Percentiles & { statuses: Record<string, number> };

export async function timed(send: () => Promise<Response>): Promise<Answer> {
  const started = performance.now();
  const res = await send();
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

export const statusCounts = (answers: Answer[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
};

/** p50/p95/p99 and statuses of `requests` GETs of each path after `warmup` unmeasured ones. */
export async function readFigures(
  base: string,
  apiKey: string,
  paths: Record<string, string>,
  requests: number,
  warmup = 20,
): Promise<Record<string, ReadFigures>> {
  const headers = { authorization: `Bearer ${apiKey}` };
  const result: Record<string, ReadFigures> = {};
  for (const [name, path] of Object.entries(paths)) {
    for (let i = 0; i < warmup; i++) await timed(() => fetch(base + path, { headers }));
    const answers: Answer[] = [];
    for (let i = 0; i < requests; i++) answers.push(await timed(() => fetch(base + path, { headers })));
    result[name] = { ...percentiles(answers.map((a) => a.ms)), statuses: statusCounts(answers) };
  }
  return result;
}

/**
 * Follows the list's nextCursor from the first page until `depth` jobs are behind (pages of
 * `take`), as a client paging through its history does; returns the cursor there, the pages
 * walked and their latencies.
 */
export async function walkCursor(base: string, apiKey: string, depth: number, take = 200) {
  const headers = { authorization: `Bearer ${apiKey}` };
  let cursor: string | null = null;
  let passed = 0;
  const ms: number[] = [];
  while (passed < depth) {
    const started = performance.now();
    const res = await fetch(`${base}/api/v1/import-jobs?take=${take}${cursor ? `&cursor=${cursor}` : ''}`, { headers });
    const page = (await res.json()) as { items?: unknown[]; nextCursor?: string | null };
    ms.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`cursor walk: ${res.status} ${JSON.stringify(page).slice(0, 300)}`);
    passed += page.items?.length ?? 0;
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  return { cursor, passed, pages: ms.length, ...percentiles(ms) };
}
