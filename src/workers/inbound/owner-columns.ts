import { copyText } from '../../shared/inbound/copy-text.js';

/**
 * A chunk's rows with the columns that name their owner put in front of each row: tenant,
 * source system and import job, in the order of copyNewTargets (sql.ts), so that PostgreSQL can
 * COPY them straight into `targets`. The rows are COPY text, where a raw newline byte only ever
 * ends a row (UTF-8 never uses that byte inside a character), so this copies bytes without reading
 * a row's columns; a last row without its newline gets the prefix too.
 */
export function withOwnerColumns(
  rows: Buffer,
  of: { tenantId: string; sourceSystem: string; importJobId: string },
): Buffer {
  const owner = Buffer.from(`${copyText(of.tenantId)}\t${copyText(of.sourceSystem)}\t${copyText(of.importJobId)}\t`);
  let count = 0;
  for (let from = 0; from < rows.length; count++) {
    const newline = rows.indexOf(10, from);
    from = newline < 0 ? rows.length : newline + 1;
  }
  const out = Buffer.allocUnsafe(rows.length + count * owner.length);
  let to = 0;
  for (let from = 0; from < rows.length;) {
    const newline = rows.indexOf(10, from);
    const end = newline < 0 ? rows.length : newline + 1;
    to += owner.copy(out, to);
    to += rows.copy(out, to, from, end);
    from = end;
  }
  return out;
}
