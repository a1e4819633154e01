import { createHash } from 'node:crypto';

// "Same key, same body?" on an idempotent retry compares one of two fingerprints, stored with the
// record the first request made. Inbound pushes (up to 16 MB) are fingerprinted by the bytes as
// sent: they are in hand, while serialising a parsed 1,000-target batch again cost a sixth of its
// preparation. Everything else by its content, so key order and equivalent forms do not matter.

const sha256 = (data: string | Uint8Array): Buffer => createHash('sha256').update(data).digest();

/** SHA-256 of a body's bytes as sent. */
export const bodyFingerprint = (bytes: Uint8Array): Buffer => sha256(bytes);

/** SHA-256 of a value's canonical JSON: equal content fingerprints equal whatever its key order. */
export const contentFingerprint = (value: unknown): Buffer => sha256(canonicalJson(value));

/** JSON with object keys sorted and undefined members left out. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
