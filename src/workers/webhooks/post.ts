import http from 'node:http';
import https from 'node:https';
import {
  TargetRefusedError,
  assertLiteralTargetAllowed,
  guardedLookup,
  parseWebhookUrl,
} from '../../shared/webhooks/target-policy.js';
import { TimeoutError, withTimeout } from '../../shared/timeout.js';

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
 * One POST of a webhook: no redirects followed, no connection reuse, the whole attempt (DNS,
 * connect, TLS, response and body) bounded by timeoutMs. Only a 2xx counts as delivered. The
 * target is checked against the SSRF policy on the addresses actually connected to.
 */
export async function postWebhook(
  target: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; allowPrivate: boolean },
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
  const chunks: Buffer[] = [];
  let received = 0;
  let req!: http.ClientRequest;
  const exchange = new Promise<Ending>((finish) => {
    const request = url.protocol === 'https:' ? https.request : http.request;
    req = request(
      url,
      {
        method: 'POST',
        agent: false,
        lookup: guardedLookup(options.allowPrivate) as unknown as http.RequestOptions['lookup'],
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
        res.on('end', done);
        res.on('error', () => undefined); // reported by 'close' below, or destroyed after finish
        res.on('close', () =>
          res.complete ? done() : finish({ outcome: 'NetworkError', error: 'the connection closed mid-response' }),
        );
      },
    );
    req.on('error', (err: Error & { code?: string }) => {
      if (err instanceof TargetRefusedError || err.code === 'target_refused')
        finish({ outcome: 'Refused', error: clean(err.message) });
      else finish({ outcome: 'NetworkError', error: clean(err.code ? `${err.code}: ${err.message}` : err.message) });
    });
    req.end(payload);
  });
  const ending = await withTimeout(exchange, options.timeoutMs, 'the webhook POST').catch((err: unknown): Ending => {
    if (!(err instanceof TimeoutError)) throw err;
    const waiting = statusCode === null ? 'waiting for the response' : 'reading the response body';
    return { outcome: 'Timeout', error: `timed out after ${options.timeoutMs} ms ${waiting}` };
  });
  req.destroy();
  const snippet = received > 0 ? clean(Buffer.concat(chunks).subarray(0, snippetBytes).toString('utf8')) : '';
  return { ...ending, statusCode, latencyMs: elapsed(), responseSnippet: statusCode === null ? null : snippet };
}
