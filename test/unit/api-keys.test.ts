import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiKeyPattern, generateApiKey, hashApiKey } from '../../src/shared/api-keys.js';

describe('API keys', () => {
  it('are long, random, recognisable and stored only as prefix + sha256', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.key).toMatch(apiKeyPattern);
    expect(a.key).not.toBe(b.key);
    expect(a.key.length).toBeGreaterThanOrEqual(56);
    expect(a.key.startsWith(`${a.prefix}_`)).toBe(true);
    expect(a.hash).toEqual(createHash('sha256').update(a.key).digest());
    expect(hashApiKey(a.key)).toEqual(a.hash);
  });
});
