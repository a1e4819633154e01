import { describe, expect, it } from 'vitest';
import { targetRow } from '../../src/gateway/inbound/chunk-rows.js';
import { chunkRowColumns } from '../../src/shared/inbound/chunk-message.js';

// COPY text format: a backslash, newline, carriage return and tab inside a value are escaped;
// \N is NULL. test/integration/chunk-rows-apply.test.ts proves PostgreSQL reads these rows into
// the same targets as the JSON chunk; these cases pin the text itself.
const columns = (row: string) => {
  expect(row.endsWith('\n')).toBe(true);
  const values = row.slice(0, -1).split('\t');
  expect(values).toHaveLength(chunkRowColumns.length);
  return Object.fromEntries(chunkRowColumns.map((c, i) => [c, values[i]]));
};

describe('targetRow', () => {
  it('writes each column in the order of chunkRowColumns, absent fields as NULL or the column default', () => {
    const row = columns(
      targetRow(4, { externalId: 'e-1', name: 'Site', coordinates: { latitude: 52.5, longitude: -0 } }),
    );
    expect(row).toEqual({
      item_index: '4',
      external_id: 'e-1',
      name: 'Site',
      address: '\\N',
      latitude: '52.5',
      longitude: '0',
      time_windows: '[]', // NOT NULL columns: their defaults
      service_duration_minutes: '\\N',
      priority: '\\N',
      tags: '{}',
      metadata: '{}',
    });
  });

  it('escapes what COPY reads specially, in text, JSON and array columns', () => {
    const row = columns(
      targetRow(0, {
        externalId: 'a\\b\tc',
        name: 'line\nnext\rend',
        address: { line1: 'Quote " and \\ and \n', city: 'Köln 🏠', countryCode: 'DE' },
        timeWindows: [],
        serviceDurationMinutes: 0,
        priority: 5,
        tags: ['{a,b}', 'say "hi"', 'back\\slash', 'NULL', ' spaced ', 'tab\there'],
        metadata: { 'k\ty': 'v\\', n: 1.5e-7, b: false, z: null },
      }),
    );
    expect(row.external_id).toBe('a\\\\b\\tc');
    expect(row.name).toBe('line\\nnext\\rend');
    // JSON.stringify escapes the newline itself; COPY then doubles every backslash.
    expect(row.address).toBe('{"line1":"Quote \\\\" and \\\\\\\\ and \\\\n","city":"Köln 🏠","countryCode":"DE"}');
    expect(row.time_windows).toBe('[]');
    expect([row.service_duration_minutes, row.priority]).toEqual(['0', '5']);
    expect(row.tags).toBe('{"{a,b}","say \\\\"hi\\\\"","back\\\\\\\\slash","NULL"," spaced ","tab\\there"}');
    expect(row.metadata).toBe('{"k\\\\ty":"v\\\\\\\\","n":1.5e-7,"b":false,"z":null}');
  });

  it('writes coordinates exactly as String() writes them, whatever the number', () => {
    const values = [0, -0, 90, -180, 52.5, 1e-7, -1.5e-7, 5e-324, 89.99999999999999, 0.1 + 0.2, 13.59242038698867];
    for (let i = 0; i < 1000; i++) values.push((Math.random() - 0.5) * 180, Math.round(Math.random() * 1e6) / 1e4);
    for (const latitude of values) {
      const longitude = -latitude / 2;
      const row = columns(targetRow(0, { externalId: 'e', name: 'n', coordinates: { latitude, longitude } }));
      expect([row.latitude, row.longitude]).toEqual([String(latitude), String(longitude)]);
    }
  });

  it('never writes a line PostgreSQL would take for the end of data (\\.)', () => {
    const row = targetRow(1, { externalId: '\\.', name: '.', coordinates: { latitude: 0, longitude: 0 } });
    expect(row.split('\n').some((line) => line === '\\.')).toBe(false);
    expect(columns(row).external_id).toBe('\\\\.');
  });
});
