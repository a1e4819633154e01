import type { TargetFields } from '../../shared/inbound/target-schema.js';
import { copyNull as nullValue, copyText } from '../../shared/inbound/copy-text.js';

// A target as one row of PostgreSQL's COPY text format (src/shared/inbound/copy-text.ts), in the
// column order of chunkRowColumns (src/shared/inbound/chunk-message.ts, inbound.targets.chunk v2).
// The gateway refused NUL and unpaired surrogates already (src/gateway/http/storable.ts), so every
// string here encodes to UTF-8 as it is.

/** A JSON value as a jsonb column: JSON.stringify escapes newlines, tabs and CRs itself; its backslashes are doubled. */
const jsonColumn = (value: unknown): string => {
  if (value == null) return nullValue;
  const json = JSON.stringify(value);
  return json.includes('\\') ? json.replaceAll('\\', '\\\\') : json;
};

/**
 * Latitude and longitude as two columns. JSON.stringify writes a finite number exactly as String()
 * does (ECMA-262, SerializeJSONProperty), but into its own buffer: a third of the time of two
 * number strings in a template (bench/prepare-batch.ts, "COPY rows + chunks").
 */
const coordinateColumns = (latitude: number, longitude: number): string =>
  JSON.stringify([latitude, longitude]).slice(1, -1).replace(',', '\t');

const numberColumn = (value: number | null | undefined): string => (value == null ? nullValue : String(value));

// In an array literal each element is quoted, and a quote or backslash inside it is escaped, so
// braces, commas, spaces and the word NULL stay text.
const arraySpecial = /["\\]/;
const arraySpecials = /["\\]/g;
const arrayElement = (s: string): string => `"${arraySpecial.test(s) ? s.replace(arraySpecials, '\\$&') : s}"`;
const quotedArray = (values: readonly string[]): string => copyText(`{${values.map(arrayElement).join(',')}}`);

// Tags are short plain words nearly always: then each element is only quoted (a third of the
// time map, join and the escape checks take).
const tagSpecial = /["\\\n\r\t]/;
function textArrayColumn(values: readonly string[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const s = values[i]!;
    if (tagSpecial.test(s)) return quotedArray(values);
    out += i === 0 ? `"${s}"` : `,"${s}"`;
  }
  return `${out}}`;
}

/**
 * One item of a chunk as a COPY text row, newline included, its columns in the order of
 * chunkRowColumns (a template, not a map over that list: half the CPU; the worker's COPY names
 * the same list, and test/integration/chunk-rows-apply.test.ts proves both paths store the same).
 * Absent time windows, tags and metadata are written as the targets table's defaults ([], {}, {})
 * rather than NULL: those columns are NOT NULL, and the worker COPYs a chunk of new targets
 * straight into that table (src/workers/inbound/apply-chunk.ts).
 */
export function targetRow(index: number, t: TargetFields): string {
  const c = t.coordinates;
  const place = c == null ? `${nullValue}\t${nullValue}` : coordinateColumns(c.latitude, c.longitude);
  return `${index}\t${copyText(t.externalId)}\t${copyText(t.name)}\t${jsonColumn(t.address)}\t${place}\t${t.timeWindows == null ? '[]' : jsonColumn(t.timeWindows)}\t${numberColumn(t.serviceDurationMinutes)}\t${numberColumn(t.priority)}\t${t.tags == null ? '{}' : textArrayColumn(t.tags)}\t${t.metadata == null ? '{}' : jsonColumn(t.metadata)}\n`;
}
