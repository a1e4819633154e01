import { AppError } from '../../shared/errors.js';

export type JsonShapeLimits = { maxDepth: number; maxKeysPerObject: number };
export const defaultJsonShapeLimits: JsonShapeLimits = { maxDepth: 32, maxKeysPerObject: 1000 };

/**
 * One pass over a JSON text before it is parsed, so a hostile shape costs a linear scan and a
 * 400, not a deep parse, a recursive hash or a huge error list: nesting deeper than maxDepth or
 * an object with more than maxKeysPerObject keys is refused. Also tells whether any string
 * holds a \u0000 or \uD800–\uDFFF escape, the only way JSON text can carry strings PostgreSQL
 * cannot store (the caller then finds which ones, after parsing). Malformed text is left to
 * JSON.parse.
 */
export function checkJsonShape(
  text: string,
  limits: JsonShapeLimits = defaultJsonShapeLimits,
): { suspectEscapes: boolean } {
  const keys = new Int32Array(limits.maxDepth + 2); // keys of each open container; -1: an array
  let depth = 0;
  let suspectEscapes = false;
  const n = text.length;
  // The next backslash at or after the scan (-1: none left); found by indexOf, which is much
  // faster than a loop over each character, as are the jumps to closing quotes below.
  let backslash = -2;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: jump to its closing quote, stopping only at escapes before it
      for (i++; ;) {
        const quote = text.indexOf('"', i);
        if (quote === -1) return { suspectEscapes }; // unterminated: JSON.parse refuses it
        if (backslash !== -1 && backslash < i) backslash = text.indexOf('\\', i);
        if (backslash === -1 || backslash > quote) {
          i = quote;
          break;
        }
        i = backslash + 1; // the escaped character
        if (text.charCodeAt(i) === 0x75) {
          // \uXXXX: 0000 or a surrogate half (D800–DFFF)
          const hex = text.slice(i + 1, i + 5);
          if (hex === '0000' || /^[dD][89a-fA-F]/.test(hex)) suspectEscapes = true;
          i += 5;
        } else {
          i += 1;
        }
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > limits.maxDepth) {
        throw new AppError('validation_failed', `The body nests deeper than ${limits.maxDepth} levels.`, {
          body: [`nested deeper than ${limits.maxDepth} levels`],
        });
      }
      keys[depth] = c === 0x7b ? 0 : -1;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (c === 0x3a && depth > 0 && keys[depth]! >= 0) {
      if (++keys[depth]! > limits.maxKeysPerObject) {
        throw new AppError(
          'validation_failed',
          `An object in the body has more than ${limits.maxKeysPerObject} fields.`,
          {
            body: [`an object has more than ${limits.maxKeysPerObject} fields`],
          },
        );
      }
    }
  }
  return { suspectEscapes };
}
