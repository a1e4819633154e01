import { pause, retrying, schedules } from '../shared/retry.js';
import { jsonOrText } from './json-or-text.js';

/** The service refused the key, the scope or the limits: no batch can succeed, so the run stops (exit 2). */
export class FatalError extends Error {}

export type Answer = { status: number; body: unknown; headers: Headers };

/** Statuses worth another attempt: the service (or a proxy before it) could not take the request now. */
const retryable = new Set([429, 502, 503, 504]);

/** Retry-After in ms (delta-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export type Http = {
  request(
    method: 'GET' | 'POST',
    path: string,
    init?: { body?: Buffer; headers?: Record<string, string> },
  ): Promise<Answer>;
  /** Attempts retried, by why: the status (429, 502, 503, 504) or "no answer" (for the summary). */
  retries(): Record<string, number>;
};

/** An answer (or none) worth another attempt; the last one is what the request returns. */
class Unanswered extends Error {
  answer: Answer | null = null;
}

/**
 * Requests to the gateway with the API key. A 429, 502/503/504 or a failed connection is tried
 * again (retrying(), schedules.pushRetry), never sooner than the answer's Retry-After; 401 and 403
 * end the run. The same request is sent again byte for byte, so an Idempotency-Key makes the retry
 * safe.
 */
export function createHttp(baseUrl: string, apiKey: string, signal: AbortSignal): Http {
  const retried: Record<string, number> = {};
  return {
    retries: () => ({ ...retried }),
    async request(method, path, init = {}) {
      let notBefore = 0; // the last answer's Retry-After, when it outlasts the schedule's wait
      const attempt = async (): Promise<Answer> => {
        if (notBefore > Date.now()) await pause(notBefore - Date.now(), signal);
        let answer: Answer;
        try {
          const res = await fetch(`${baseUrl}${path}`, {
            method,
            signal,
            headers: { Authorization: `Bearer ${apiKey}`, Accept: 'application/json', ...init.headers },
            ...(init.body ? { body: init.body } : {}),
          });
          // The status decides even when the body cannot be read to its end (the connection closed).
          const text = await res.text().catch(() => '');
          answer = { status: res.status, headers: res.headers, body: jsonOrText(text) };
        } catch (err) {
          if (signal.aborted) throw err;
          throw new Unanswered((err as Error).cause ? String((err as Error).cause) : (err as Error).message);
        }
        // Outside the try: a refusal (401/403) ends the run, it is never taken for a lost connection.
        if (!retryable.has(answer.status)) return checked(answer);
        throw Object.assign(new Unanswered(`${answer.status} ${errorMessage(answer.body)}`), { answer });
      };
      return retrying(schedules.pushRetry, attempt, {
        retriable: (err) => err instanceof Unanswered,
        onRetry: (err, _, waitMs) => {
          const { answer } = err as Unanswered;
          const why = answer ? String(answer.status) : 'no answer';
          retried[why] = (retried[why] ?? 0) + 1;
          const after = retryAfterMs(answer?.headers.get('retry-after') ?? null);
          notBefore = after !== null && after > waitMs ? Date.now() + after : 0;
        },
        signal,
      }).catch((err: unknown) => {
        if (!(err instanceof Unanswered)) throw err;
        return err.answer ?? { status: 0, headers: new Headers(), body: { error: { message: err.message } } };
      });
    },
  };
}

/** 401 and 403 end the run (exit 2): no batch can succeed with this key. 403 names the scope it lacks. */
export function checked(answer: Answer): Answer {
  if (answer.status === 401)
    throw new FatalError(
      `the service does not accept the API key (401 ${errorMessage(answer.body)}); check CONNECT_API_KEY or --api-key`,
    );
  if (answer.status === 403) {
    const scope = (answer.body as { error?: { details?: { requiredScope?: unknown } | null } } | null)?.error?.details
      ?.requiredScope;
    throw new FatalError(
      typeof scope === 'string'
        ? `the API key lacks the scope ${scope} (403 ${errorMessage(answer.body)}); ask the service's operator for a key with ${scope}`
        : `the service refused the API key (403 ${errorMessage(answer.body)})`,
    );
  }
  return answer;
}

/** The message of the standard error shape, or the body as text. */
export function errorMessage(body: unknown): string {
  const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
  if (error?.message) return error.code ? `${error.code}: ${error.message}` : error.message;
  return typeof body === 'string' ? body.slice(0, 200) : (JSON.stringify(body)?.slice(0, 200) ?? '');
}
