import { describe, expect, it } from 'vitest';
import { checkJsonShape } from '../../src/gateway/http/json-shape.js';

// The pre-parse scan jumps from quote to quote with indexOf: what is inside strings (brackets,
// colons, escaped quotes and backslashes) must never count as structure, and escapes that may
// carry text PostgreSQL cannot store must still be seen wherever they are.
const limits = { maxDepth: 3, maxKeysPerObject: 2 };
const verdict = (text: string) => {
  try {
    return checkJsonShape(text, limits);
  } catch (err) {
    return (err as Error).message;
  }
};

describe('checkJsonShape', () => {
  it('counts only the structure outside strings', () => {
    expect(verdict('{"a":"{[{[{[","b":"::::"}')).toEqual({ suspectEscapes: false });
    expect(verdict('{"a\\"{[{[":1,"b\\\\":"]]]}}}"}')).toEqual({ suspectEscapes: false });
    expect(verdict('[[["x"]]]')).toEqual({ suspectEscapes: false });
    expect(verdict('[[[["x"]]]]')).toBe('The body nests deeper than 3 levels.');
    expect(verdict('{"a":1,"b":2}')).toEqual({ suspectEscapes: false });
    expect(verdict('{"a":1,"b":2,"c\\":":3}')).toBe('An object in the body has more than 2 fields.');
    // A string ending in an escaped backslash ends at the next quote.
    expect(verdict('{"a":"x\\\\","b":[[[1]]]}')).toBe('The body nests deeper than 3 levels.');
  });

  it('sees NUL and surrogate escapes anywhere, and only real escapes', () => {
    expect(verdict('{"a":"ok","b":"x\\u0000"}')).toEqual({ suspectEscapes: true });
    expect(verdict('{"\\ud800":1}')).toEqual({ suspectEscapes: true });
    expect(verdict('["\\n\\"\\\\", "tail \\uDFFF"]')).toEqual({ suspectEscapes: true });
    expect(verdict('["\\u00e9", "\\u0041"]')).toEqual({ suspectEscapes: false });
    // An escaped backslash followed by "u0000" is text, not an escape.
    expect(verdict('["\\\\u0000"]')).toEqual({ suspectEscapes: false });
    expect(verdict('"no escapes at all"')).toEqual({ suspectEscapes: false });
  });

  it('leaves an unterminated string to JSON.parse', () => {
    expect(verdict('{"a":"never ends')).toEqual({ suspectEscapes: false });
    expect(verdict('{"a":"ends in a backslash\\')).toEqual({ suspectEscapes: false });
  });
});
