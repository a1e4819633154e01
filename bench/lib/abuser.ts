// The noisy neighbour of bench/noisy-neighbour.ts, run as its own process so its client-side
// work never shares the gateway's or the measuring client's event loop. With one valid key it
// sends the worst a client may, within its limits, until `seconds` have passed: the largest
// batches (10,000 targets, close to the 16 MiB body limit) back to back on several connections,
// bodies nested to the deepest and widest shapes, invalid UTF-8, and bodies that trickle one
// byte every half second. Answered 429, it waits Retry-After (and up to a second more, so its
// connections do not all come back at once) before it sends again on that connection: that gets
// more through than sending again at once. Modes (issue 24): `ignoresRetryAfter` sends its
// largest batches again at once after a 429, `chunked` sends them without Content-Length (its
// quota is charged as they arrive); both on the flood connections only. Mode `worst` (issue 31,
// memory): the largest batches on the flood connections and deep, wide and invalid bodies on two
// more, all sent again at once whatever the answer, the trickles, and drafts of route suggestions
// of the largest import job (routeJobId) back to back on routeConnections more. Mode `refused`
// (issue 53): on each flood connection, 10 MB bodies to an operation that takes 1 MiB (413), one
// after another, each written whole before the next, as a client writing its body before it reads
// (Python's http.client) does, so the gateway discards from every connection at once (its
// lingering close). Parameters come as
// JSON in BENCH_ABUSER_PARAMS; the result (answers by status) is one line `BENCH_RESULT {json}` on stdout.
import http from 'node:http';
import { makeTargets } from '../../test/support/targets.js';
import { resultPrefix } from './stats.js';

export type AbuserParams = {
  url: string;
  apiKey: string;
  seconds: number;
  /** Connections sending maximal batches back to back. */
  floods: number;
  /** Connections trickling a body. */
  trickles: number;
  /** waits (default): as above; ignoresRetryAfter, chunked: largest batches only (see the top). */
  mode?: 'waits' | 'ignoresRetryAfter' | 'chunked' | 'worst' | 'refused';
  /** worst: an import job of the largest draft's size, and the connections asking for its draft. */
  routeJobId?: number;
  routeConnections?: number;
};

export type AbuserResult = {
  requests: number;
  statuses: Record<string, number>;
  /** Bytes of request bodies sent in full. */
  bytesSent: number;
  /** Bytes of request bodies answered 2xx. */
  bytesAccepted: number;
  cpuSeconds: number;
};

const params = JSON.parse(process.env.BENCH_ABUSER_PARAMS ?? '{}') as AbuserParams;
const batchUrl = new URL('/api/v1/inbound/targets/batch', params.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: params.floods + params.trickles + 4 });
const statuses: Record<string, number> = {};
let requests = 0;
let bytesSent = 0;
let bytesAccepted = 0;
const count = (status: string) => {
  requests++;
  statuses[status] = (statuses[status] ?? 0) + 1;
};

// The largest batch: 10,000 targets with metadata near its 4 KiB limit, just under 16 MiB.
const padding = 'x'.repeat(900);
const heavy = Buffer.from(
  JSON.stringify({
    sourceSystem: 'abuse',
    targets: makeTargets(10_000, 'abuse').map((t) => ({ ...t, metadata: { ...t.metadata, note: padding } })),
  }),
);
// A typical large batch: 10,000 ordinary targets (about 3 MiB).
const large = Buffer.from(JSON.stringify({ sourceSystem: 'abuse', targets: makeTargets(10_000, 'abuse-l') }));
const deep = Buffer.from(`{"sourceSystem":"x","targets":${'['.repeat(500_000)}${']'.repeat(500_000)}}`);
const wide = Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, i]))));
const invalidUtf8 = Buffer.concat([
  large.subarray(0, large.length - 200),
  Buffer.from([0xc3, 0x28]),
  large.subarray(-200),
]);
const bodies = [heavy, large, deep, wide, invalidUtf8];
const odd = [deep, wide, invalidUtf8];
// The largest draft: as many vehicles and stops as allowed, over the whole day.
const draft = Buffer.from(
  JSON.stringify({
    date: '2026-11-23',
    depot: { latitude: 52.5, longitude: 13.4 },
    vehicles: 50,
    shift: { start: '00:00', end: '24:00' },
    maxStopsPerRoute: 500,
  }),
);

const deadline = Date.now() + params.seconds * 1000;

/** Sends one body; resolves to the seconds the gateway asked it to wait (Retry-After on a 429), or 0. */
function send(body: Buffer | null, url = batchUrl): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: {
        authorization: `Bearer ${params.apiKey}`,
        'content-type': 'application/json',
        ...(!body
          ? { 'content-length': 1_000_000 }
          : params.mode === 'chunked'
            ? { 'transfer-encoding': 'chunked' }
            : { 'content-length': body.length }),
      },
    });
    let trickle: NodeJS.Timeout | undefined;
    req.on('response', (res) => {
      clearInterval(trickle);
      res.resume();
      res.on('end', () => {
        count(String(res.statusCode));
        const status = res.statusCode ?? 0;
        if (body && status >= 200 && status < 300) bytesAccepted += body.length;
        resolve(status === 429 ? Number(res.headers['retry-after'] ?? 1) : 0);
      });
    });
    req.on('error', () => {
      clearInterval(trickle);
      count('network error');
      resolve(0);
    });
    if (body && params.mode === 'chunked') {
      // As a stream would send it: 64 KiB chunks, each once the connection takes the previous.
      void (async () => {
        for (let at = 0; at < body.length && !req.destroyed; at += 65536) {
          if (!req.write(body.subarray(at, at + 65536)))
            await new Promise((r) => req.once('drain', r).once('close', r));
        }
        req.end(() => (bytesSent += body.length));
      })();
    } else if (body) {
      req.end(body, () => (bytesSent += body.length));
    } else {
      // One byte every 500 ms of a body announced as 1 MB: the gateway's body deadline cuts it.
      trickle = setInterval(() => {
        if (Date.now() > deadline) {
          clearInterval(trickle);
          req.destroy();
        } else req.write(' ');
      }, 500);
    }
  });
}

/** refused: a 10 MB body to an operation that takes 1 MiB, written whole; resolves once answered and written (or failed). */
const refusedUrl = new URL('/api/v1/connect/jobs', params.url);
const tenMegabytes = Buffer.alloc(10_000_000, ' ');
function sendRefused(): Promise<void> {
  return new Promise((resolve) => {
    let answered = false;
    let written = false;
    const settle = () => answered && written && resolve();
    const req = http.request(refusedUrl, {
      method: 'POST',
      agent: false, // a connection of its own: the gateway closes it after the refusal
      headers: {
        authorization: `Bearer ${params.apiKey}`,
        'content-type': 'application/json',
        'content-length': tenMegabytes.length,
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => {
        count(String(res.statusCode));
        answered = true;
        settle();
      });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A reset before the answer was read: the answer is lost. After it (Node reads the answer
      // while it writes): the body was cut, which a client reading only after writing (Python's
      // http.client) would see as the answer lost.
      if (!answered) count(`network error ${err.code ?? err.message}`);
      else statuses['cut after its answer'] = (statuses['cut after its answer'] ?? 0) + 1;
      answered = written = true;
      settle();
    });
    req.end(tenMegabytes, () => {
      bytesSent += tenMegabytes.length;
      written = true;
      settle();
    });
  });
}

async function loop(pick: (i: number) => Buffer | null, url = batchUrl) {
  for (let i = 0; Date.now() < deadline; i++) {
    const waitSeconds = await send(pick(i), url);
    // Up to a second later than asked, so the connections do not all come back at once.
    const waits = params.mode === undefined || params.mode === 'waits';
    const waitMs = waits && waitSeconds > 0 ? waitSeconds * 1000 + Math.random() * 1000 : 0;
    if (waitMs > 0) await new Promise((r) => setTimeout(r, Math.min(waitMs, deadline - Date.now())));
  }
}

const cpuStart = process.cpuUsage();
const draftUrl = new URL(`/api/v1/import-jobs/${params.routeJobId}/route-suggestion`, params.url);
await Promise.all(
  params.mode === 'refused'
    ? Array.from({ length: params.floods }, async () => {
        while (Date.now() < deadline) await sendRefused();
      })
    : params.mode === 'ignoresRetryAfter' || params.mode === 'chunked'
      ? Array.from({ length: params.floods }, () => loop(() => heavy))
      : params.mode === 'worst'
        ? [
            ...Array.from({ length: params.floods }, () => loop(() => heavy)),
            ...Array.from({ length: 2 }, (_, c) => loop((i) => odd[(i + c) % odd.length]!)),
            ...Array.from({ length: params.trickles }, () => loop(() => null)),
            ...Array.from({ length: params.routeConnections ?? 0 }, () => loop(() => draft, draftUrl)),
          ]
        : [
            ...Array.from({ length: params.floods }, (_, c) => loop((i) => bodies[(i + c) % bodies.length]!)),
            ...Array.from({ length: params.trickles }, () => loop(() => null)),
          ],
);
const cpu = process.cpuUsage(cpuStart);
agent.destroy();
const result: AbuserResult = {
  requests,
  statuses,
  bytesSent,
  bytesAccepted,
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
};
process.stdout.write(`${resultPrefix}${JSON.stringify(result)}\n`);
