import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { renderError, statusOfKind } from '../../src/gateway/http/error-mapping.js';
import { fieldName, toFieldErrors } from '../../src/gateway/http/validate.js';
import { AppError, errorCatalogue } from '../../src/shared/errors.js';
import { storableText, unstorableReason } from '../../src/gateway/http/storable.js';
import { unstorableKeyName } from '../support/json-fuzz.js';
import { mulberry32 } from '../support/prng.js';

const ids = { requestId: 'req-1', correlationId: 'corr-1' };

describe('error rendering', () => {
  const err = new AppError('validation_failed', 'bad', { 'a.b': ['is required'], c: ['too long', 'bad char'] });

  it('standard shape has exactly the five fields', () => {
    expect(renderError(err, 'standard', ids)).toEqual({
      error: {
        code: 'validation_failed',
        message: 'bad',
        correlationId: 'corr-1',
        fieldErrors: err.fieldErrors,
        details: null,
      },
    });
  });

  it('connect shape flattens field errors into details and carries both ids', () => {
    expect(renderError(err, 'connect', ids)).toEqual({
      error: {
        code: 'validation_failed',
        message: 'bad',
        details: [
          { field: 'a.b', message: 'is required' },
          { field: 'c', message: 'too long' },
          { field: 'c', message: 'bad char' },
        ],
        requestId: 'req-1',
        correlationId: 'corr-1',
      },
    });
  });

  it('every catalogued code maps to an HTTP status', () => {
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      expect(statusOfKind[entry.kind], code).toBeGreaterThanOrEqual(400);
    }
  });
});

describe('field errors from zod', () => {
  it('names nested and array fields and unknown keys', () => {
    const schema = z.strictObject({ items: z.array(z.strictObject({ qty: z.number() })) });
    const result = schema.safeParse({ items: [{ qty: 1 }, { qty: 'x', extra: 1 }], other: true });
    expect(result.success).toBe(false);
    const fields = toFieldErrors(result.error!, 'body');
    expect(Object.keys(fields).sort()).toEqual(['items[1].extra', 'items[1].qty', 'other']);
    expect(fields.other).toEqual(['Unknown field.']);
  });

  it('uses the root name for whole-body errors', () => {
    const result = z.strictObject({ a: z.string() }).safeParse('text');
    expect(Object.keys(toFieldErrors(result.error!, 'body'))).toEqual(['body']);
  });

  it('formats paths', () => {
    expect(fieldName(['a', 0, 'b'])).toBe('a[0].b');
    expect(fieldName([])).toBe('');
  });

  it('escapes NUL and lone surrogates in names, so any name can be stored (property)', () => {
    expect(fieldName(['metadata', 'a\ud800', 0, '\u0000', 'ok\ud83d\ude00'])).toBe(
      'metadata.a\\ud800[0].\\u0000.ok\ud83d\ude00',
    );
    const seed = Date.now() % 100_000;
    const rnd = mulberry32(seed);
    for (let i = 0; i < 2000; i++) {
      const key = unstorableKeyName(rnd);
      expect(unstorableReason(key), `seed ${seed}`).not.toBeNull();
      expect(unstorableReason(fieldName(['a', key, 1])), `seed ${seed}: ${JSON.stringify(key)}`).toBeNull();
      const storable = key.replaceAll('\u0000', '').replace(/\p{Surrogate}/gu, '');
      expect(storableText(storable)).toBe(storable); // storable text is left as it is
    }
  });
});
