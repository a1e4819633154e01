import { z } from 'zod';
import { parseOrThrow } from './validate.js';

/** The Idempotency-Key request header: optional, 1–200 visible ASCII characters. */
export const idempotencyKeyHeaderSchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,200}$/, '1 to 200 visible ASCII characters')
  .optional();

/** The header's value, or undefined when absent; a malformed one is a 400 naming the header. */
export const idempotencyKeyOf = (header: string): string | undefined =>
  parseOrThrow(idempotencyKeyHeaderSchema, header || undefined, 'Idempotency-Key');
