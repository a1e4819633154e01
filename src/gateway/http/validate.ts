import type { z } from 'zod';
import { AppError, type FieldErrors } from '../../shared/errors.js';

/** `a.b[2].c` from a zod issue path. */
export function fieldName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

export function toFieldErrors(error: z.ZodError, root: string): FieldErrors {
  const fields: FieldErrors = {};
  const add = (name: string, message: string) => (fields[name || root] ??= []).push(message);
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add(fieldName([...issue.path, key]), 'Unknown field.');
    } else {
      add(fieldName(issue.path), issue.message);
    }
  }
  return fields;
}

/** Parses or throws a 400 validation_failed with one entry per offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, root: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new AppError('validation_failed', `The request ${root} is invalid.`, toFieldErrors(result.error, root));
}
