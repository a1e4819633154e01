// The webhook receivers of bench/webhooks.ts, in processes of their own so the bench's event loop
// (raising events, polling PostgreSQL) does not delay when a delivery is seen to arrive.
// BENCH_RECEIVERS says which: `healthy` (the healthy receiver) or `noise` (slow, failing, black
// hole), each with its control server. Apart, as a healthy tenant's receiver and a failing host
// are in the world: in one process the noise's hundreds of open requests and 500s delayed when a
// healthy delivery was seen to arrive (its p99 in the outage, above the dispatcher's). Prints one
// line `receivers: {"healthy":port,…}` (its own servers') once listening, then serves on 127.0.0.1:
//
//   healthy    answers 200 at once; records each request's arrival (path, webhook-id header, time);
//              under /bare the bare dispatcher's (bench/lib/bare-dispatcher.ts), not counted as open
//   slow       answers 200 after BENCH_SLOW_MS (12 s: past the dispatcher's 10 s timeout)
//   failing    answers 500 at once
//   blackHole  a bare TCP server: accepts the connection, reads the request, never answers
//   control    GET /arrivals?from=<n>: healthy arrivals from the n-th on, as [path, id, at]
//              GET /noise: requests each noisy receiver has had, and how many are open now
//              GET /open?from=<ms>&to=<ms>: noisy requests open at once, sampled every 100 ms (avg, max)
//              GET /peak?reset=1: the most dispatchers' requests open at once at this process's
//              receivers since the last reset, counted exactly (each arrival and each answer or
//              close), not sampled
//
// Times are epoch milliseconds with sub-millisecond resolution (performance.timeOrigin +
// performance.now()), the clock the bench stamps its commits with.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

const slowMs = Number(process.env.BENCH_SLOW_MS ?? 12_000);
const now = () => performance.timeOrigin + performance.now();

type Kind = 'slow' | 'failing' | 'blackHole';
const arrivals: [string, string, number][] = [];
const requests: Record<Kind, number> = { slow: 0, failing: 0, blackHole: 0 };
const open: Record<Kind, number> = { slow: 0, failing: 0, blackHole: 0 };
const samples: [number, number][] = []; // [time, noisy requests open]
let openAll = 0; // every request not answered yet, healthy ones included
let peakAll = 0;

/** Counts a request (any receiver) as open until its response is over or its connection closes. */
function counted(over: http.ServerResponse | net.Socket) {
  openAll++;
  peakAll = Math.max(peakAll, openAll);
  over.once('close', () => openAll--);
}

/**
 * Counts a noisy request as open until it is over: its response sent or its connection closed
 * (an HTTP response's 'close'), or the bare connection closed. Not the connection alone: the
 * dispatcher keeps connections alive (issue 50), so an answered request's connection may stay
 * open, idle, for seconds.
 */
function opened(kind: Kind, over: http.ServerResponse | net.Socket) {
  requests[kind]++;
  open[kind]++;
  counted(over);
  over.once('close', () => open[kind]--);
}

const healthy = http.createServer((req, res) => {
  if (!req.url?.startsWith('/bare')) counted(res); // only the dispatchers' requests count against their slots
  req.resume();
  req.on('end', () => {
    arrivals.push([req.url ?? '/', String(req.headers['webhook-id'] ?? ''), now()]);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});

const slow = http.createServer((req, res) => {
  opened('slow', res);
  req.resume();
  const timer = setTimeout(() => {
    if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok, eventually');
  }, slowMs);
  res.once('close', () => clearTimeout(timer));
});

const failing = http.createServer((req, res) => {
  opened('failing', res);
  req.resume();
  req.on('end', () => res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error'));
});

const blackHole = net.createServer((socket) => {
  opened('blackHole', socket);
  socket.on('error', () => undefined); // the dispatcher resets it after its timeout
  socket.resume(); // the request is read; nothing is ever written back
});

const control = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://control');
  const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  switch (url.pathname) {
    case '/arrivals':
      return json(arrivals.slice(Number(url.searchParams.get('from') ?? 0)));
    case '/noise':
      return json({ requests, open });
    case '/peak': {
      const peak = peakAll;
      if (url.searchParams.get('reset')) peakAll = openAll;
      return json({ peak, open: openAll });
    }
    case '/open': {
      const from = Number(url.searchParams.get('from') ?? 0);
      const to = Number(url.searchParams.get('to') ?? Infinity);
      const inWindow = samples.filter(([t]) => t >= from && t <= to).map(([, n]) => n);
      const avg = inWindow.length ? inWindow.reduce((a, b) => a + b, 0) / inWindow.length : NaN;
      return json({ samples: inWindow.length, avg, max: inWindow.length ? Math.max(...inWindow) : NaN });
    }
    default:
      res.writeHead(404).end();
  }
});

setInterval(() => {
  samples.push([now(), open.slow + open.failing + open.blackHole]);
  if (samples.length > 20_000) samples.splice(0, 10_000);
}, 100);

const listen = (server: net.Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
const role = process.env.BENCH_RECEIVERS;
const ports =
  role === 'healthy'
    ? { healthy: await listen(healthy), control: await listen(control) }
    : role === 'noise'
      ? {
          slow: await listen(slow),
          failing: await listen(failing),
          blackHole: await listen(blackHole),
          control: await listen(control),
        }
      : null;
if (!ports) throw new Error(`BENCH_RECEIVERS must be healthy or noise, not ${role}`);
process.stdout.write(`receivers: ${JSON.stringify(ports)}\n`);
process.once('SIGTERM', () => process.exit(0));
