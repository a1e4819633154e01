import { AppError, type FieldErrors } from '../../shared/errors.js';
import { findUnstorableText, type TextProblem } from './storable.js';
import { checkJsonShape } from './json-shape.js';
import { fieldName } from './validate.js';

export type ParsedJson = {
  value: unknown;
  /** Strings (keys or values) PostgreSQL could not store, with their paths; usually empty. */
  unstorable: TextProblem[];
};

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Body bytes to a JSON value, without Koa (also run in worker threads): 400 invalid_json for
 * bytes that are not UTF-8 or text that is not JSON, 400 validation_failed for a shape past the
 * limits (json-shape.ts). Empty text is undefined.
 */
export function parseJsonBytes(bytes: Uint8Array): ParsedJson {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new AppError('invalid_json', 'The body is not valid UTF-8.');
  }
  if (text.trim() === '') return { value: undefined, unstorable: [] };
  const { suspectEscapes } = checkJsonShape(text);
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new AppError('invalid_json', `The body is not valid JSON: ${(err as Error).message}`);
  }
  return { value, unstorable: suspectEscapes ? findUnstorableText(value) : [] };
}

/** Unstorable text outside partially accepted items refuses the whole body (400 validation_failed). */
export function refuseUnstorableBody(problems: readonly TextProblem[]): void {
  if (problems.length === 0) return;
  const errors: FieldErrors = Object.create(null);
  for (const p of problems) (errors[fieldName(['body', ...p.path])] ??= []).push(p.message);
  throw new AppError('validation_failed', 'The request body is invalid.', errors);
}

/**
 * The unstorable strings inside items of a partially accepted array, by item index (each such
 * item is refused on its own); one anywhere else refuses the whole body (refuseUnstorableBody).
 */
export function unstorableByItem(problems: readonly TextProblem[], itemsField: string) {
  const items = new Map<number, TextProblem[]>();
  const elsewhere: TextProblem[] = [];
  for (const p of problems) {
    const [field, index, ...rest] = p.path;
    if (field === itemsField && typeof index === 'number') {
      items.set(index, [...(items.get(index) ?? []), { path: rest, message: p.message }]);
    } else {
      elsewhere.push(p);
    }
  }
  refuseUnstorableBody(elsewhere);
  return items;
}
