import { createHash } from 'node:crypto';

/** SHA-256 of a request's parsed JSON, for "same key, same body?" checks on idempotent retries. */
export const requestHash = (body: unknown): Buffer => createHash('sha256').update(JSON.stringify(body)).digest();

// Import jobs are fingerprinted by their body's bytes instead: the bytes are in hand, while
// serialising a parsed 1,000-target batch again cost a sixth of its preparation. The tag byte
// tells such a fingerprint (33 bytes) from a requestHash stored before it (32 bytes).
const bodyBytesTag = 0x01;

/** The fingerprint of a body as sent: the tag byte, then SHA-256 of its bytes. */
export function bodyFingerprint(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(33);
  out[0] = bodyBytesTag;
  createHash('sha256').update(bytes).digest().copy(out, 1);
  return out;
}

/** Whether a stored fingerprint is a bodyFingerprint (else a requestHash recorded before them). */
export const isBodyFingerprint = (stored: Buffer): boolean => stored.length === 33 && stored[0] === bodyBytesTag;
