import type { Server, IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import { scaled } from './time-scale.js';

export type RawUploadResult = {
  status: number;
  headers: IncomingHttpHeaders;
  /** The gateway closed its socket of this connection (at once, or after lingering). */
  closedByServer: boolean;
  /** Bytes the gateway read from this connection (head and body), from its own socket. */
  serverBytesRead: number;
  /** What serverBytesRead was when the client had the whole answer. */
  serverBytesReadAtAnswer: number;
  /** Bytes of the request (head and body) the client meant to send (endless: the first pass of it). */
  requestBytes: number;
  /** Bytes of the request the client wrote (the connection took them). */
  clientBytesWritten: number;
  /** The client's writes met a reset (EPIPE / ECONNRESET), as Python's http.client would. */
  clientReset: boolean;
};

/**
 * Sends a request over a raw socket as an abusive client would: the head and `first` bytes of
 * the body, then, once answered, the rest of it regardless (`bodyBytes` in all, or `chunked`
 * in chunks of `chunkBytes` without Content-Length, each sent as the connection takes it; with
 * `endless`, the body again and again, declared 1 GiB long, until the gateway closes; with
 * `pauseMs`, that long between chunks). The client keeps writing after the gateway's end of
 * stream, as a client that writes its whole body before reading does. Waits until the gateway
 * has closed its socket (up to closeWithinMs), so a drained body shows as serverBytesRead close
 * to requestBytes.
 */
export async function rawUpload(
  server: Server,
  url: string,
  opts: {
    path: string;
    headers: Record<string, string>;
    body: Buffer;
    chunked?: boolean;
    /** Body bytes sent before waiting for an answer (chunked: all, as the connection takes them). */
    first?: number;
    endless?: boolean;
    pauseMs?: number;
    closeWithinMs?: number;
  },
): Promise<RawUploadResult> {
  const { port } = new URL(url);
  const serverSockets = new Map<number, net.Socket>();
  const onConnection = (s: net.Socket) => serverSockets.set(s.remotePort!, s);
  server.on('connection', onConnection);
  // Half-open allowed: the gateway's end of stream does not end the client's writing.
  const socket = net.connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let clientReset = false;
  socket.on('error', () => (clientReset = true)); // writes after the server closed: EPIPE / ECONNRESET
  const localPort = socket.localPort!;
  const serverSocket = () => serverSockets.get(localPort);
  const serverClosed = () => serverSocket()?.destroyed === true;

  const head = [
    `POST ${opts.path} HTTP/1.1`,
    'Host: 127.0.0.1',
    ...Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}`),
    opts.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${opts.endless ? 2 ** 30 : opts.body.length}`,
    '',
    '',
  ].join('\r\n');
  const chunkBytes = 16 * 1024;
  const frames: Buffer[] = [];
  for (let at = 0; at < opts.body.length; at += chunkBytes) {
    const part = opts.body.subarray(at, at + chunkBytes);
    frames.push(
      opts.chunked ? Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]) : part,
    );
  }
  if (opts.chunked && !opts.endless) frames.push(Buffer.from('0\r\n\r\n'));
  const requestBytes = head.length + frames.reduce((n, f) => n + f.length, 0);

  let closed = false;
  socket.once('close', () => (closed = true));
  let written = 0;
  let received = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => (received = Buffer.concat([received, d])));
  const answered = () => {
    const end = received.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const lines = received.subarray(0, end).toString('latin1').split('\r\n');
    const headers: IncomingHttpHeaders = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (received.length < end + 4 + length) return null;
    return { status: Number(lines[0]!.split(' ')[1]), headers };
  };
  const until = async (condition: () => boolean, what: string, withinMs = scaled(15_000)) => {
    const deadline = Date.now() + withinMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`raw upload: no ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const write = async (frame: Buffer) => {
    if (closed || socket.destroyed) return;
    written += frame.length;
    if (!socket.write(frame)) await new Promise((r) => socket.once('drain', r).once('close', r));
  };
  const stopped = () => closed || socket.destroyed || serverClosed();

  await write(Buffer.from(head));
  let sent = 0;
  let next = 0;
  const firstBytes = opts.first ?? (opts.chunked ? Infinity : 0);
  for (; next < frames.length && sent < firstBytes && !answered() && !closed; next++) {
    await write(frames[next]!);
    sent += frames[next]!.length;
  }
  await until(() => answered() !== null, 'answer');
  const serverBytesReadAtAnswer = serverSocket()?.bytesRead ?? NaN;
  for (; (next < frames.length || opts.endless) && !stopped(); next++) {
    if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
    await write(frames[next % frames.length]!);
  }
  await until(serverClosed, 'close', opts.closeWithinMs);
  const answer = answered()!;
  const serverBytesRead = serverSocket()?.bytesRead ?? NaN;
  server.off('connection', onConnection);
  socket.destroy();
  return {
    ...answer,
    closedByServer: serverClosed(),
    serverBytesRead,
    serverBytesReadAtAnswer,
    requestBytes,
    clientBytesWritten: written,
    clientReset,
  };
}
