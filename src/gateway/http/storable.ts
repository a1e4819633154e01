// PostgreSQL's text and jsonb cannot hold U+0000, and jsonb refuses unpaired UTF-16 surrogates
// (JSON's "\ud800"). Such strings are refused at the edge (400, or the one item of a batch),
// never accepted and then failed in PostgreSQL.

// In u-mode a well-formed surrogate pair is one code point, so this matches lone halves only.
const loneSurrogate = /\p{Surrogate}/u;

/** Why PostgreSQL could not store this string, or null when it can. */
export function unstorableReason(text: string): string | null {
  if (text.includes('\u0000')) return 'contains the NUL character (\\u0000), which cannot be stored';
  if (loneSurrogate.test(text)) return 'contains an unpaired UTF-16 surrogate, which cannot be stored';
  return null;
}

const loneSurrogates = /\p{Surrogate}/gu;

/**
 * The text with NUL and lone surrogates written as their JSON escapes (`\u0000`, `\ud800`, six
 * plain characters): for text the service itself stores or shows, such as the field names in an
 * error list, which must never fail in PostgreSQL whatever names a client sent.
 */
export const storableText = (text: string): string =>
  text.replaceAll('\u0000', '\\u0000').replace(loneSurrogates, (c) => `\\u${c.charCodeAt(0).toString(16)}`); // d800-dfff: four digits

export type TextProblem = { path: (string | number)[]; message: string };

/**
 * Every key or string value in a parsed JSON value that PostgreSQL could not store (at most
 * `max`). Iterative, so any nesting depth is safe.
 */
export function findUnstorableText(value: unknown, max = 100): TextProblem[] {
  const problems: TextProblem[] = [];
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0 && problems.length < max) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      const reason = unstorableReason(v);
      if (reason) problems.push({ path, message: reason });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: [...path, i] });
    } else if (v !== null && typeof v === 'object') {
      for (const [key, child] of Object.entries(v)) {
        const reason = unstorableReason(key);
        if (reason) problems.push({ path: [...path, key], message: `the field name ${reason}` });
        stack.push({ value: child, path: [...path, key] });
      }
    }
  }
  return problems;
}
