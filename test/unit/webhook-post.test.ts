import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/kafka.js';
import { createWebhookAgents, postWebhook, type WebhookAgents } from '../../src/workers/webhooks/post.js';

// post.ts with kept-alive connections (issue 50): reused per origin when the answer was read to
// its end, never past the SSRF policy, a stale one replaced within the attempt. Local servers on
// 127.0.0.1; nothing here asserts on a duration.

type Server = { url: (path: string) => string; connections: Socket[]; requests: number; close(): Promise<void> };

async function server(handle: (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void) {
  const s = http.createServer();
  const out: Server = {
    url: (path) => `http://127.0.0.1:${(s.address() as AddressInfo).port}${path}`,
    connections: [],
    requests: 0,
    close: () => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(() => resolve()));
    },
  };
  s.on('connection', (socket: Socket) => out.connections.push(socket));
  s.on('request', (req, res) => {
    out.requests++;
    req.resume();
    req.on('end', () => handle(req, res, out.requests));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return out;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function agents(): WebhookAgents {
  const a = createWebhookAgents({ allowPrivate: true });
  cleanups.push(() => a.destroy());
  return a;
}

const post = (url: string, a?: WebhookAgents, allowPrivate = true) =>
  postWebhook(url, { 'webhook-id': 'evt_test' }, '{}', { timeoutMs: 30_000, allowPrivate, agents: a });

describe('webhook POST connections', () => {
  it('reuses one connection for attempts to one origin whose answers were read to the end', async () => {
    const s = await server((_req, res) => res.end('ok'));
    cleanups.push(() => s.close());
    const a = agents();
    for (let i = 0; i < 3; i++) expect((await post(s.url(`/hook/${i % 2}`), a)).outcome).toBe('Succeeded');
    expect(s.requests).toBe(3);
    expect(s.connections).toHaveLength(1);
    // An error status read to its end keeps the connection too.
    const failing = await server((_req, res) => res.writeHead(500).end('no'));
    cleanups.push(() => failing.close());
    expect((await post(failing.url('/x'), a)).outcome).toBe('HttpError');
    expect((await post(failing.url('/x'), a)).outcome).toBe('HttpError');
    expect(failing.connections).toHaveLength(1);
  });

  it('opens a connection per attempt without agents, and for an answer not read to its end', async () => {
    const s = await server((req, res) => res.end(req.url === '/long' ? 'x'.repeat(100_000) : 'ok'));
    cleanups.push(() => s.close());
    expect((await post(s.url('/a'))).outcome).toBe('Succeeded');
    expect((await post(s.url('/a'))).outcome).toBe('Succeeded');
    expect(s.connections).toHaveLength(2);
    const a = agents();
    const long = await post(s.url('/long'), a);
    expect(long.outcome).toBe('Succeeded');
    expect(long.responseSnippet).toHaveLength(500);
    expect((await post(s.url('/a'), a)).outcome).toBe('Succeeded');
    expect(s.connections).toHaveLength(4); // the long answer's connection was closed, not reused
  });

  it('replaces a kept connection the receiver closed, within the same attempt', async () => {
    // The receiver answers the first request of each connection and drops the connection at the
    // second (as a server whose idle timeout ran out just as the request came).
    const perConnection = new Map<Socket, number>();
    const s = await server((req, res) => {
      const n = (perConnection.get(req.socket) ?? 0) + 1;
      perConnection.set(req.socket, n);
      if (n === 1) res.end('ok');
      else req.socket.destroy();
    });
    cleanups.push(() => s.close());
    const a = agents();
    expect((await post(s.url('/a'), a)).outcome).toBe('Succeeded');
    const second = await post(s.url('/a'), a);
    expect(second).toMatchObject({ outcome: 'Succeeded', statusCode: 200 });
    expect(s.connections).toHaveLength(2);
  });

  it('still bounds an attempt on a kept connection by its timeout, and does not keep that connection', async () => {
    let held = 0;
    const s = await server((req, res) => {
      if (req.url === '/hold')
        held++; // never answered
      else res.end('ok');
    });
    cleanups.push(() => s.close());
    const a = agents();
    expect((await post(s.url('/a'), a)).outcome).toBe('Succeeded');
    const timedOut = await postWebhook(s.url('/hold'), {}, '{}', { timeoutMs: 200, allowPrivate: true, agents: a });
    expect(timedOut).toMatchObject({ outcome: 'Timeout', statusCode: null });
    expect(s.connections).toHaveLength(1); // the held attempt went on the kept connection …
    // … which the timeout closed (a request sent on it would wait behind the held one for ever).
    await eventually(() => (s.connections[0]!.closed ? true : undefined), 10_000, 'the held connection closed');
    expect((await post(s.url('/a'), a)).outcome).toBe('Succeeded');
    expect(held).toBe(1); // the connection the timeout closed is not taken for a stale one and replaced
  });

  it('refuses a private target with agents as without: a kept connection is never one the policy did not check', async () => {
    const s = await server((_req, res) => res.end('ok'));
    cleanups.push(() => s.close());
    const a = agents();
    const url = s.url('/a').replace('127.0.0.1', 'localhost');
    expect((await post(url, a, true)).outcome).toBe('Succeeded'); // a connection to localhost is kept …
    const refused = await post(url, a, false); // … and not used by an attempt the policy refuses
    expect(refused.outcome).toBe('Refused');
    expect(refused.error).toMatch(/loopback/);
    expect((await post(s.url('/a'), a, false)).outcome).toBe('Refused'); // an IP literal, checked before
  });
});
