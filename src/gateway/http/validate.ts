import type { z } from 'zod';
import { AppError, type FieldErrors } from '../../shared/errors.js';
import { storableText } from './storable.js';

/**
 * `a.b[2].c` from a zod issue path. Names are client text: NUL and lone surrogates are escaped
 * (storableText), so error lists built from them can be stored (an import job's errors) as well as sent.
 */
export function fieldName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${storableText(String(seg))}` : storableText(String(seg));
  }
  return out;
}

/** Most fields one error answer lists; the rest are counted in one more entry. */
export const maxFieldErrors = 100;

export function toFieldErrors(error: z.ZodError, root: string): FieldErrors {
  // No prototype: a field named __proto__ or constructor is a field like any other.
  const fields: FieldErrors = Object.create(null);
  let listed = 0;
  let omitted = 0;
  const add = (name: string, message: string) => {
    const key = name || root;
    if (!(key in fields) && listed >= maxFieldErrors) return void omitted++;
    if (!(key in fields)) listed++;
    (fields[key] ??= []).push(message);
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add(fieldName([...issue.path, key]), 'Unknown field.');
    } else {
      add(fieldName(issue.path), issue.message);
    }
  }
  if (omitted > 0) fields[root] = [...(fields[root] ?? []), `${omitted} more field errors omitted`];
  return fields;
}

/** Parses or throws a 400 validation_failed with one entry per offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, root: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new AppError('validation_failed', `The request ${root} is invalid.`, toFieldErrors(result.error, root));
}
