import type { Context, Middleware } from 'koa';
import getRawBody from 'raw-body';
import { AppError } from '../../shared/errors.js';
import { TimeoutError, withTimeout } from '../../shared/timeout.js';
import { findUnstorableText } from './storable.js';
import { parseJsonBytes, type ParsedJson } from './json-text.js';
import { isLingering, lingerAfterAnswer, type LingerBounds } from './lingering-close.js';
import type { GatewayContext, GatewayState } from './state.js';

export const acceptedRequestMediaTypes = ['application/json', 'text/json', 'application/*+json'] as const;
/** Taken only by routes that list it in requestMediaTypes (the OAuth token endpoint). */
export const formMediaType = 'application/x-www-form-urlencoded';

/**
 * A client's share of body bytes (rate-limit/upload-quota.ts): charge throws 429 when `bytes` do
 * not fit, an error whose `msBeforeRoom` (lingering-close.ts's roomAfterMs) says when the quota's window ends.
 */
export type BodyQuota = { charge(bytes: number): Promise<void> };

/** What a body may be: at most limitBytes (413), arriving within deadlineMs (408), within quota (429). */
export type BodyLimits = { limitBytes: number; deadlineMs: number; quota?: BodyQuota };

function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length');
  return ctx.get('transfer-encoding') !== '' || (length !== '' && length !== '0');
}

/**
 * The bytes a body will hold once read, known before reading it (for the memory budget): its
 * Content-Length, or limitBytes for a body of unknown length; 0 without a body or for one
 * answered 413 unread.
 */
export function expectedBodyBytes(ctx: Context, limitBytes: number): number {
  if (!hasBody(ctx)) return 0;
  if (ctx.get('transfer-encoding') !== '') return limitBytes;
  const declared = Number(ctx.get('content-length'));
  return Number.isInteger(declared) && declared <= limitBytes ? declared : 0;
}

/**
 * Refusing costs little: a request answered before its body was read to the end (refused, or a
 * route that takes none) is answered with Connection: close, and its connection lingers a bounded
 * while (lingering-close.ts) so that a client still writing its body reads the answer; the bytes
 * it reads meanwhile are charged to the sender's upload quota (`quota`). A body that did not
 * arrive in time (408) is not waited for again: its connection closes once answered.
 */
export const closeWhenBodyUnread =
  (linger: LingerBounds, quota: (ctx: GatewayContext) => BodyQuota): Middleware<GatewayState> =>
  async (ctx, next) => {
    if (isLingering(ctx.req.socket)) {
      // Pipelined behind a refused body: not served; the connection is closing.
      ctx.state.clientLeft = true;
      ctx.req.socket.destroy();
      return;
    }
    try {
      await next();
    } finally {
      if (hasBody(ctx) && !ctx.req.readableEnded) {
        ctx.set('Connection', 'close');
        if (ctx.status !== 408 && !ctx.state.clientLeft) lingerAfterAnswer(ctx.req, ctx.res, quota(ctx), linger);
      }
    }
  };

const tooLarge = (limitBytes: number) =>
  new AppError('payload_too_large', `The body exceeds the limit of ${limitBytes} bytes.`, null, { limitBytes });

/** The whole body as bytes, within its limits (413 / 408 / 429 beyond). */
async function readBytes(ctx: Context, { limitBytes, deadlineMs, quota }: BodyLimits): Promise<Buffer> {
  // Charged before reading, so a client past its quota costs no parsing; a length past the
  // limit is not charged, as it is answered 413 unread. A body of unknown length is charged as
  // it arrives.
  const declared = ctx.get('transfer-encoding') === '' ? Number(ctx.get('content-length')) : NaN;
  if (!Number.isInteger(declared)) return readWithin(ctx, deadlineMs, readCounted(ctx, limitBytes, quota));
  if (declared <= limitBytes) await quota?.charge(declared);
  return readWithin(ctx, deadlineMs, getRawBody(ctx.req, { limit: limitBytes, length: declared }));
}

/**
 * A body without Content-Length, charged to the quota chunk by chunk before the next is read, so
 * it is cut off at the first chunk past the size limit (413) or past the quota (429). The
 * request is not destroyed on the way out: its answer is still to be sent.
 */
async function readCounted(ctx: Context, limitBytes: number, quota: BodyQuota | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of ctx.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limitBytes) throw tooLarge(limitBytes);
    await quota?.charge(chunk.length);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, length);
}

async function readWithin(ctx: Context, deadlineMs: number, reading: Promise<Buffer>): Promise<Buffer> {
  try {
    return await withTimeout(reading, deadlineMs, 'the body');
  } catch (err) {
    if (err instanceof TimeoutError) {
      // The rest of the body is never read: answer, then close the connection.
      ctx.set('Connection', 'close');
      ctx.req.unpipe();
      throw new AppError('request_timeout', `The body did not arrive within ${deadlineMs} ms.`, null, { deadlineMs });
    }
    if (err instanceof AppError) throw err;
    const e = err as { type?: string; status?: number; limit?: number };
    if (e.type === 'entity.too.large' || e.status === 413) throw tooLarge(e.limit!);
    throw new AppError('invalid_json', 'The body could not be read completely.');
  }
}

/** 415 unless the request is of one of mediaTypes, in UTF-8. */
function checkMediaType(ctx: Context, mediaTypes: readonly string[]): void {
  if (!ctx.is(...mediaTypes)) {
    throw new AppError(
      'unsupported_media_type',
      `Content-Type ${ctx.get('content-type') || '(none)'} is not supported; send ${mediaTypes[0]}.`,
    );
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(ctx.get('content-type'))?.[1];
  if (charset && !/^utf-?8$/i.test(charset)) {
    throw new AppError('unsupported_media_type', 'Only UTF-8 JSON bodies are supported.');
  }
}

/**
 * The body's bytes, unparsed, for routes that parse it themselves (off the event loop): 415, 413
 * and 408 as readJsonBody; an absent body is an empty buffer.
 */
export async function readRawBody(ctx: Context, limits: BodyLimits): Promise<Buffer> {
  if (!hasBody(ctx)) return Buffer.alloc(0);
  checkMediaType(ctx, acceptedRequestMediaTypes);
  return readBytes(ctx, limits);
}

/**
 * Reads and parses a JSON body, its bytes kept alongside: 415 for another media type, 413 past the
 * limit, 408 when it does not arrive within deadlineMs, 429 past the client's upload quota, and
 * parseJsonBytes's 400s. A missing body parses as undefined. A route may take other media types; a form body (formMediaType) parses to an object of its
 * parameters, a repeated parameter to an array of its values.
 */
export async function readJsonBody(
  ctx: Context,
  limits: BodyLimits,
  mediaTypes: readonly string[] = acceptedRequestMediaTypes,
): Promise<ParsedJson & { bytes: Buffer }> {
  if (!hasBody(ctx)) return { value: undefined, unstorable: [], bytes: Buffer.alloc(0) };
  checkMediaType(ctx, mediaTypes);
  const bytes = await readBytes(ctx, limits);
  if (ctx.is(formMediaType)) {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new AppError('invalid_json', 'The body is not valid UTF-8.');
    }
    const value = parseForm(text);
    return { value, unstorable: findUnstorableText(value), bytes };
  }
  return { ...parseJsonBytes(bytes), bytes };
}

function parseForm(text: string): Record<string, string | string[]> {
  // No prototype: a parameter named constructor or __proto__ is a parameter like any other.
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(text)) {
    const seen = out[name];
    out[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return out;
}
