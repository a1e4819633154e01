// PostgreSQL's COPY text format, as the gateway writes chunk rows (src/gateway/inbound/chunk-rows.ts)
// and the inbound worker prefixes them (src/workers/inbound/owner-columns.ts): a backslash,
// newline, carriage return and tab in a value are written as \\, \n, \r and \t; \N is NULL;
// every other character stands for itself. So a raw newline byte only ever ends a row.

const copySpecial = /[\\\n\r\t]/;
const copySpecials = /[\\\n\r\t]/g;
const copyEscapes: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A text value as one COPY text column. */
export const copyText = (s: string): string =>
  copySpecial.test(s) ? s.replace(copySpecials, (c) => copyEscapes[c]!) : s;

/** NULL in COPY text. */
export const copyNull = '\\N';
