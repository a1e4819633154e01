import { createHash } from 'node:crypto';

/** SHA-256 of a request's parsed JSON, for "same key, same body?" checks on idempotent retries. */
export const requestHash = (body: unknown): Buffer => createHash('sha256').update(JSON.stringify(body)).digest();

/**
 * requestHash(body) for a body whose `field` is an array whose items are already serialised
 * (itemTexts[i] === JSON.stringify(body[field][i])): the same digest without serialising the
 * items again (the inbound batch serialises each target once, for this and for its chunk).
 */
export function requestHashWithItems(body: object, field: string, itemTexts: readonly string[]): Buffer {
  const hash = createHash('sha256').update('{');
  let first = true;
  for (const key of Object.keys(body)) {
    const text = key === field ? `[${itemTexts.join(',')}]` : JSON.stringify((body as Record<string, unknown>)[key]);
    if (text === undefined) continue; // JSON.stringify leaves such members out
    hash.update(`${first ? '' : ','}${JSON.stringify(key)}:`).update(text);
    first = false;
  }
  return hash.update('}').digest();
}
