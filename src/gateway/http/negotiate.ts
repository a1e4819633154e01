import type { Context } from 'koa';

// Responses are JSON text; Accept chooses only the media type label
// (application/json by default, text/json or text/plain when asked for).
const offered = ['application/json', 'text/json', 'text/plain'] as const;

export function responseMediaType(ctx: Context): (typeof offered)[number] {
  const chosen = ctx.accepts(...offered);
  return typeof chosen === 'string' ? (chosen as (typeof offered)[number]) : 'application/json';
}

export function sendJson(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = `${responseMediaType(ctx)}; charset=utf-8`;
  ctx.body = JSON.stringify(body);
}
