// A child process of bench/reads.ts: one client's reads on many connections for a while, in a
// process of its own, so parsing its answers never shares the measured client's event loop.
// Env: BASE (the gateway), API_KEY, PATHS (JSON list, taken in turn), CONNECTIONS, SECONDS.
// Prints "started", then, when the time is up, one result line: statuses, latencies, requests/s.
// A lane answered 429 or 503 waits its Retry-After, as a client following the API guide does.
import { percentiles, resultPrefix, round } from './stats.js';

const base = process.env.BASE!;
const headers = { authorization: `Bearer ${process.env.API_KEY}` };
const paths = JSON.parse(process.env.PATHS!) as string[];
const seconds = Number(process.env.SECONDS);
const until = Date.now() + seconds * 1000;
const ms: number[] = [];
const statuses: Record<string, number> = {};

console.log('started');
await Promise.all(
  Array.from({ length: Number(process.env.CONNECTIONS) }, async (_, lane) => {
    for (let i = lane; Date.now() < until; i++) {
      const started = performance.now();
      const res = await fetch(base + paths[i % paths.length]!, { headers });
      await res.arrayBuffer();
      ms.push(performance.now() - started);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      const retryAfter = Number(res.headers.get('retry-after'));
      if ((res.status === 429 || res.status === 503) && retryAfter > 0)
        await new Promise((r) => setTimeout(r, Math.min(retryAfter * 1000, until - Date.now())));
    }
  }),
);
console.log(resultPrefix + JSON.stringify({ ...percentiles(ms), statuses, perSecond: round(ms.length / seconds) }));
