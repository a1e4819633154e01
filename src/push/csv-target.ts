import { jsonOrText } from './json-or-text.js';

/** Columns whose cells are numbers. */
const numeric = new Set([
  'coordinates.latitude',
  'coordinates.longitude',
  'latitude',
  'longitude',
  'serviceDurationMinutes',
  'priority',
]);
/** Columns whose cells hold JSON (arrays and objects a flat cell cannot say otherwise). */
const json = new Set(['timeWindows', 'metadata']);
/** Short names for nested fields. */
const aliases: Record<string, string> = { latitude: 'coordinates.latitude', longitude: 'coordinates.longitude' };

/**
 * One CSV row (header → cell) as a target: `address.city` style columns nest, `tags` splits on
 * `|`, number columns become numbers, timeWindows and metadata are JSON; empty cells are left out.
 * A cell that is not what its column needs is sent as it is, for the service to reject with a reason.
 */
export function csvRowToTarget(row: Record<string, string>): Record<string, unknown> {
  // Without a prototype: a column named __proto__.x nests like any other.
  const target: Record<string, unknown> = Object.create(null);
  for (const [column, cell] of Object.entries(row)) {
    if (cell === '') continue;
    const name = aliases[column] ?? column;
    let value: unknown = cell;
    if (numeric.has(column) && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(cell.trim())) value = Number(cell);
    else if (name === 'tags') value = cell.split('|');
    else if (json.has(name)) value = jsonOrText(cell);
    const path = name.split('.');
    let at = target;
    for (const key of path.slice(0, -1)) at = (at[key] ??= Object.create(null)) as Record<string, unknown>;
    at[path.at(-1)!] = value;
  }
  return target;
}
