import type { Context } from 'koa';

// Responses are JSON text; Accept chooses only the media type label
// (application/json by default, text/json or text/plain when asked for).
export const jsonMediaTypes = ['application/json', 'text/json', 'text/plain'] as const;

/** The label Accept asks for among those the route documents (default: the JSON trio). */
export function responseMediaType(ctx: Context, documented: readonly string[] = jsonMediaTypes): string {
  const mine = jsonMediaTypes.filter((t) => documented.includes(t));
  const chosen = mine.length > 0 ? ctx.accepts(...mine) : false;
  return typeof chosen === 'string' ? chosen : 'application/json';
}

/** A body that is JSON text already (e.g. made by a worker thread): sent as it is, where any
 *  other body is serialised first. */
export class JsonText {
  constructor(readonly text: string) {}
}

export function sendJson(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = `${responseMediaType(ctx, ctx.state.responseMediaTypes)}; charset=utf-8`;
  ctx.body = body instanceof JsonText ? body.text : JSON.stringify(body);
}
