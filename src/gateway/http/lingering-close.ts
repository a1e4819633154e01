import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { BodyQuota } from './body.js';

// A request refused before its body was read is answered with Connection: close. Closing the
// connection right after the answer made every client that writes its whole body before it
// reads (Python's http.client and requests, many Java and .NET clients) fail with a broken pipe
// instead of reading the refusal: the client's pending writes meet a closed socket, and the
// kernel answers them with a reset that also discards the answer (issue 41). Reading the rest
// of the body to its end, as Node would, lets one request make the gateway read gigabytes
// (issue 24). So, as nginx's "lingering close": once the answer has gone out, the gateway closes
// its sending side and reads and discards what still arrives, within bounds (bytes and time after
// the answer, and the sender's upload quota), then closes the connection.
//
// Where the quota has no room for what arrives, the discarding waits for the quota's next window
// instead of closing (issue 53): closing then cut exactly the client that repeats its mistake
// (one refused 10 MB body spends most of a 16 MiB window, so the next refusal within the window
// met a reset). Paused, the connection costs no reading: the client's writes wait in its own
// socket buffers. The discard thus reads at the quota's rate, still within both bounds.

/** The bounds of one lingering close (REFUSED_BODY_DRAIN_BYTES / _MS); 0 in either: close at once. */
export type LingerBounds = { maxBytes: number; maxMs: number };

/** Connections lingering after a refusal: a request pipelined behind the refused body is not served. */
const lingering = new WeakSet<Socket>();

export const isLingering = (socket: Socket): boolean => lingering.has(socket);

/** Connections lingering now, and those of them whose discarding waits for room in the sender's upload quota (/metrics, tests). */
let lingeringNow = 0;
let waitingForRoom = 0;
export const lingeringConnections = (): number => lingeringNow;
export const lingeringWaitingForRoom = (): number => waitingForRoom;

/** When a quota that refused bytes has room again (ms; its msBeforeRoom), or null when the refusal does not say. */
export const roomAfterMs = (err: unknown): number | null => {
  const ms = (err as { msBeforeRoom?: unknown } | null)?.msBeforeRoom;
  return typeof ms === 'number' && Number.isFinite(ms) ? Math.max(0, ms) : null;
};

/** Shortest wait for a quota's room: a window reported ended at once is asked again no sooner. */
const minWaitMs = 50;

/**
 * Arranges for the connection of `req`, whose answer `res` says Connection: close, to linger once
 * the answer has been sent. Node then calls socket.destroySoon(), which this replaces for this
 * socket alone: the sending side ends (the client sees the answer, then end of stream) and the
 * rest of the body is read and discarded, each chunk charged to `quota` before the next is read;
 * a chunk the quota has no room for waits, the connection paused, for the window the refusal
 * names, and is charged then. The connection is closed when the body has ended, once more than
 * maxBytes were read from it since the answer (past the bound by at most what one read of the
 * socket holds, 64 KiB), maxMs after the answer, or at once when the quota's room comes only
 * after that (or the quota fails otherwise).
 */
export function lingerAfterAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  quota: BodyQuota,
  { maxBytes, maxMs }: LingerBounds,
): void {
  if (maxBytes <= 0 || maxMs <= 0) return;
  const socket = req.socket;
  let waiting: NodeJS.Timeout | undefined;
  const close = () => socket.destroy();
  const closeWhenFlushed = socket.destroySoon.bind(socket); // the answer's last bytes, then close
  // Before Node's own listener, which would dump the request: its parser would then discard the
  // rest of the body unseen (uncounted, uncharged). Reading it here keeps Node's backpressure.
  res.prependOnceListener('finish', () => {
    const readBefore = socket.bytesRead;
    const deadline = Date.now() + maxMs;
    const charge = (bytes: number) => {
      quota.charge(bytes).then(
        () => {
          if (!socket.destroyed) req.resume();
        },
        (err: unknown) => {
          const wait = roomAfterMs(err);
          if (socket.destroyed) return;
          // Room only after the time bound (or never): the connection would be cut then anyway.
          if (wait === null || Date.now() + wait >= deadline) return close();
          waitingForRoom++;
          waiting = setTimeout(
            () => {
              waiting = undefined;
              waitingForRoom--;
              if (!socket.destroyed) charge(bytes);
            },
            Math.max(minWaitMs, wait),
          );
        },
      );
    };
    req.on('data', (chunk: Buffer) => {
      if (socket.bytesRead - readBefore > maxBytes) return close();
      req.pause();
      charge(chunk.length);
    });
    // Everything the client sent has been read: nothing unread remains for a reset to announce.
    req.once('end', closeWhenFlushed);
    req.resume(); // a body reader that gave up paused it (raw-body for a 413)
  });
  socket.destroySoon = () => {
    lingering.add(socket);
    lingeringNow++;
    const timer = setTimeout(close, maxMs);
    socket.once('close', () => {
      lingeringNow--;
      clearTimeout(timer);
      if (waiting) {
        clearTimeout(waiting);
        waiting = undefined;
        waitingForRoom--;
      }
    });
    socket.end();
  };
}
