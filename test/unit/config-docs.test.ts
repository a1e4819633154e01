import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSettings } from '../../src/shared/config.js';
import { configReference, withConfigReference } from '../../scripts/config-doc.js';

// docs/configuration.md's settings tables are generated from the declaration in
// src/shared/config.ts: a setting added, renamed, re-bounded or re-described there fails here
// until `npm run config-doc` has written it.

describe('docs/configuration.md', () => {
  const text = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

  it('holds exactly the reference `npm run config-doc` writes', () => {
    expect(text).toBe(withConfigReference(text));
  });

  it('lists each variable once, with a description', () => {
    const names = configSettings.map((s) => s.env);
    expect(names.length).toBeGreaterThan(50);
    expect(new Set(names).size).toBe(names.length);
    expect(configSettings.filter((s) => !s.description).map((s) => s.env)).toEqual([]);
    const reference = configReference();
    for (const name of names) expect(reference).toContain(`| \`${name}\` |`);
  });
});
