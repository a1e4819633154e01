import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { AppError } from '../../shared/errors.js';

export const acceptedRequestMediaTypes = ['application/json', 'text/json', 'application/*+json'] as const;
/** Taken only by routes that list it in requestMediaTypes (the OAuth token endpoint). */
export const formMediaType = 'application/x-www-form-urlencoded';

function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length');
  return ctx.get('transfer-encoding') !== '' || (length !== '' && length !== '0');
}

/**
 * Reads and parses a JSON body: 415 for another media type, 413 past the limit,
 * 400 invalid_json for malformed text. A missing body parses as undefined.
 * A route may take other media types; a form body (formMediaType) parses to an object of its
 * parameters, a repeated parameter to an array of its values.
 */
export async function readJsonBody(
  ctx: Context,
  limitBytes: number,
  mediaTypes: readonly string[] = acceptedRequestMediaTypes,
): Promise<unknown> {
  if (!hasBody(ctx)) return undefined;
  if (!ctx.is(...mediaTypes)) {
    throw new AppError(
      'unsupported_media_type',
      `Content-Type ${ctx.get('content-type') || '(none)'} is not supported; send ${mediaTypes[0]}.`,
    );
  }
  let text: string;
  try {
    text = await getRawBody(ctx.req, {
      limit: limitBytes,
      length: ctx.get('content-length') || undefined,
      encoding: 'utf-8',
    });
  } catch (err) {
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large' || e.status === 413) {
      throw new AppError('payload_too_large', `The body exceeds the limit of ${limitBytes} bytes.`, null, {
        limitBytes,
      });
    }
    if (e.type === 'encoding.unsupported' || e.status === 415) {
      throw new AppError('unsupported_media_type', 'Only UTF-8 JSON bodies are supported.');
    }
    throw new AppError('invalid_json', 'The body could not be read completely.');
  }
  if (text.trim() === '') return undefined;
  if (ctx.is(formMediaType)) return parseForm(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch (err) {
    throw new AppError('invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
  }
  if (text.includes('\\u0000') && escapedNul.test(text)) {
    throw new AppError('validation_failed', 'Strings must not contain the NUL character (\\u0000).', {
      body: ['contains \\u0000, which cannot be stored'],
    });
  }
  return parsed;
}

// PostgreSQL text and jsonb cannot hold U+0000: refuse it here (400) rather than fail later.
// Matches a \u0000 escape that is not itself escaped (preceded by an even number of backslashes).
const escapedNul = /(?:^|[^\\])(?:\\\\)*\\u0000/;

function parseForm(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const seen = out[name];
    out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return out;
}
