import { createHash } from 'node:crypto';

/** SHA-256 of a request's parsed JSON, for "same key, same body?" checks on idempotent retries. */
export const requestHash = (body: unknown): Buffer => createHash('sha256').update(JSON.stringify(body)).digest();
