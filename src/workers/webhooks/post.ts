import http from 'node:http';
import https from 'node:https';
import {
  TargetRefusedError,
  assertLiteralTargetAllowed,
  guardedLookup,
  parseWebhookUrl,
} from '../../shared/webhooks/target-policy.js';
import { TimeoutError, withTimeout } from '../../shared/timeout.js';
import { sharedWebhookResolver, type WebhookResolver } from '../../shared/webhooks/dns-cache.js';

export type AttemptOutcome = 'Succeeded' | 'HttpError' | 'Timeout' | 'NetworkError' | 'Refused';

export type AttemptResult = {
  outcome: AttemptOutcome;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The first bytes of the response body (at most snippetBytes). */
  responseSnippet: string | null;
};

export const snippetBytes = 500;

// PostgreSQL text cannot hold NUL; a receiver may answer anything.
const clean = (s: string) => s.replaceAll(String.fromCharCode(0), '');

type Ending = Pick<AttemptResult, 'outcome' | 'error'>;

/**
 * Kept-alive connections of one dispatcher, per origin (host and port: an endpoint's, or several
 * endpoints' on one receiver). A connection is made through guardedLookup, so the address it
 * connects to is the one the SSRF policy checked; a reused one goes on to that same address (a DNS
 * answer changed since cannot redirect it). Idle connections are closed after idleMs (below the
 * 5 s many servers keep one, Node's included; a server's `Keep-Alive: timeout` shorter still is
 * heeded), at most maxIdlePerOrigin kept per origin: 64, not 4 as first, because a chained
 * attempt (an endpoint's next delivery sent in the slot of its last success) leaves its
 * connection idle for the few milliseconds its predecessor's outcome takes to record, and with 4
 * the 32 lanes of bench:webhooks to one receiver made a new connection for 1,014 of 1,502 POSTs
 * (35 with 64). Idle connections are only ever ones recently in use, so the cap bounds what one
 * origin keeps, not the total, which the slots bound.
 */
export type WebhookAgents = { allowPrivate: boolean; http: http.Agent; https: https.Agent; destroy(): void };

/**
 * allowPrivate: the SSRF policy its connections were checked under; an attempt under another
 * policy never uses them (it connects anew, checked under its own).
 */
export function createWebhookAgents({
  allowPrivate,
  idleMs = 4000,
  maxIdlePerOrigin = 64,
}: {
  allowPrivate: boolean;
  idleMs?: number;
  maxIdlePerOrigin?: number;
}): WebhookAgents {
  const options = { keepAlive: true, timeout: idleMs, maxFreeSockets: maxIdlePerOrigin, scheduling: 'lifo' as const };
  const agents = { http: new http.Agent(options), https: new https.Agent(options) };
  return {
    allowPrivate,
    ...agents,
    destroy() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** Errors of a reused idle connection the receiver closed meanwhile (before any answer). */
const staleConnection = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/**
 * One POST of a webhook: no redirects followed, the whole attempt (DNS, connect, TLS, response
 * and body) bounded by timeoutMs. Only a 2xx counts as delivered. The target is checked against
 * the SSRF policy on the addresses actually connected to. With agents, a connection whose answer
 * was read to its end is kept for the next attempt to the same origin (createWebhookAgents); one
 * that a receiver closed while idle, found so before any answer, is replaced by a new connection
 * within the same attempt and timeout. Without agents, every attempt has its own connection.
 * Names are resolved by `resolver` (default the process's: c-ares, cached for their TTL,
 * dns-cache.ts), within the attempt's timeout.
 */
export async function postWebhook(
  target: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean; agents?: WebhookAgents; resolver?: WebhookResolver },
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    url = parseWebhookUrl(target);
    assertLiteralTargetAllowed(url, options.allowPrivate);
  } catch (err) {
    return {
      outcome: 'Refused',
      statusCode: null,
      latencyMs: elapsed(),
      error: (err as Error).message,
      responseSnippet: null,
    };
  }
  const payload = Buffer.from(body, 'utf8');
  let statusCode: number | null = null;
  let chunks: Buffer[] = [];
  let received = 0;
  let req: http.ClientRequest | null = null;
  let complete = false; // the answer was read to its end: a kept-alive connection may be kept
  let sentWith: http.Agent | false = false; // the agent of the last request
  let over = false; // timed out: a connection destroyed now is not replaced
  const secure = url.protocol === 'https:';
  const { agents } = options;
  const keptAlive =
    agents && agents.allowPrivate === options.allowPrivate ? (secure ? agents.https : agents.http) : false;
  const send = (agent: http.Agent | false) =>
    new Promise<Ending | 'stale'>((finish) => {
      statusCode = null;
      chunks = [];
      received = 0;
      complete = false;
      sentWith = agent;
      const request = secure ? https.request : http.request;
      const sent = request(
        url,
        {
          method: 'POST',
          agent,
          lookup: guardedLookup(
            options.allowPrivate,
            options.resolver ?? sharedWebhookResolver(),
          ) as unknown as http.RequestOptions['lookup'],
          headers: { ...headers, 'content-type': 'application/json', 'content-length': String(payload.length) },
        },
        (res) => {
          statusCode = res.statusCode ?? null;
          const done = () => {
            const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
            finish(ok ? { outcome: 'Succeeded', error: null } : { outcome: 'HttpError', error: `HTTP ${statusCode}` });
          };
          res.on('data', (chunk: Buffer) => {
            if (received < snippetBytes) chunks.push(chunk);
            received += chunk.length;
            if (received >= snippetBytes) done(); // enough: the rest of the body is not read
          });
          res.on('end', () => {
            complete = true;
            done();
          });
          res.on('error', () => undefined); // reported by 'close' below, or destroyed after finish
          res.on('close', () =>
            res.complete ? done() : finish({ outcome: 'NetworkError', error: 'the connection closed mid-response' }),
          );
        },
      );
      req = sent;
      sent.on('error', (err: Error & { code?: string }) => {
        if (err instanceof TargetRefusedError || err.code === 'target_refused')
          finish({ outcome: 'Refused', error: clean(err.message) });
        else if (sent.reusedSocket && statusCode === null && staleConnection.has(err.code ?? '')) finish('stale');
        else finish({ outcome: 'NetworkError', error: clean(err.code ? `${err.code}: ${err.message}` : err.message) });
      });
      sent.end(payload);
    });
  const exchange = (async (): Promise<Ending> => {
    const first = await send(keptAlive);
    if (first !== 'stale') return first;
    if (over) return { outcome: 'NetworkError', error: 'the attempt is over' }; // timed out meanwhile: not sent again
    (req as http.ClientRequest | null)?.destroy();
    return (await send(false)) as Ending; // a new connection of its own: never stale
  })();
  const ending = await withTimeout(exchange, options.timeoutMs, 'the webhook POST').catch((err: unknown): Ending => {
    if (!(err instanceof TimeoutError)) throw err;
    over = true;
    const waiting = statusCode === null ? 'waiting for the response' : 'reading the response body';
    return { outcome: 'Timeout', error: `timed out after ${options.timeoutMs} ms ${waiting}` };
  });
  // A connection whose answer was read to its end goes back to its agent; any other is closed.
  if (!(sentWith && complete && ending.outcome !== 'Timeout')) (req as http.ClientRequest | null)?.destroy();
  const snippet = received > 0 ? clean(Buffer.concat(chunks).subarray(0, snippetBytes).toString('utf8')) : '';
  return { ...ending, statusCode, latencyMs: elapsed(), responseSnippet: statusCode === null ? null : snippet };
}
