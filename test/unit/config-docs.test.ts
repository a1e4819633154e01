import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configDefaults } from '../../src/shared/config.js';

// docs/configuration.md's table and the zod schema in src/shared/config.ts name the same variables
// with the same defaults: a setting added, renamed or given another default in one fails here
// until the other says the same.

/** Variables of the scripts (scripts/*), not of the processes' schema. */
const scriptVariables = new Set([
  'KAFKA_PORT',
  'KAFKA_CONTROLLER_PORT',
  'STATE_DIR',
  'CONNECT_USE_MACHINE_NODE',
  'CONNECT_DOCKER_DIR',
  'CONNECT_BUILD_CA',
]);

type Row = { names: string[]; defaultText: string };

function documentedRows(): Row[] {
  const text = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => /^\| `[A-Z]/.test(line))
    .map((line) => {
      const [names, defaults] = line.split(' | ').map((cell) => cell.replace(/^\| /, ''));
      return { names: [...names!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!), defaultText: defaults! };
    });
}

describe('docs/configuration.md', () => {
  const defaults = configDefaults();
  const rows = documentedRows();
  const documented = rows.flatMap((r) => r.names);

  it('lists every variable of the schema, and no process variable the schema lacks', () => {
    expect(rows.length).toBeGreaterThan(50);
    expect(Object.keys(defaults).filter((name) => !documented.includes(name))).toEqual([]);
    expect(documented.filter((name) => !(name in defaults) && !scriptVariables.has(name))).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
  });

  it("gives each variable the schema's default", () => {
    const checked = rows.filter((r) => r.names.every((name) => name in defaults));
    expect(checked.length).toBeGreaterThan(50);
    const wrong = checked
      .flatMap((r) =>
        r.names.map((name) => {
          const schema = defaults[name]!;
          // `value` for a default; a parenthesised phrase ("(none)", "(system CAs)") or prose for none or a computed one.
          const literal = /^`([^`]*)`$/.exec(r.defaultText.trim())?.[1];
          const ok = literal !== undefined ? literal === schema : schema === '' || !/^`/.test(r.defaultText.trim());
          return ok ? null : `${name}: documented ${r.defaultText.trim()}, schema ${JSON.stringify(schema)}`;
        }),
      )
      .filter((x) => x !== null);
    expect(wrong).toEqual([]);
  });
});
