import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { csvRowToTarget } from './csv-target.js';
import type { InputFormat } from './options.js';

/** One input record: a target to send, or why the line could not be read (a reject, not sent). */
export type InputRecord = { line: number; target: unknown } | { line: number; error: string; raw: string };

export const openInput = (path: string | null): Readable => (path ? createReadStream(path) : process.stdin);

/** The input's records in order, each with the line it starts on. */
export async function* readRecords(input: Readable, format: InputFormat): AsyncGenerator<InputRecord> {
  if (format === 'csv') yield* readCsv(input);
  else yield* readNdjson(input);
}

async function* readNdjson(input: Readable): AsyncGenerator<InputRecord> {
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    line++;
    if (text.trim() === '') continue;
    try {
      yield { line, target: JSON.parse(text) as unknown };
    } catch (err) {
      yield { line, error: `not JSON: ${(err as Error).message}`, raw: text };
    }
  }
}

async function* readCsv(input: Readable): AsyncGenerator<InputRecord> {
  const skipped: InputRecord[] = [];
  const parser = input.pipe(
    parse({
      bom: true,
      columns: true,
      skip_empty_lines: true,
      trim: true,
      info: true,
      raw: true, // the text of a skipped row, for the rejects file
      // A malformed row (wrong number of cells, a bad quote) is a reject with its reason, not the end.
      skip_records_with_error: true,
      on_skip: (err, raw) => {
        skipped.push({
          line: Number((err as { lines?: number } | undefined)?.lines ?? 0),
          error: `not a CSV row: ${err?.message}`,
          raw: raw ?? '',
        });
        return undefined;
      },
    }),
  );
  for await (const { record, info } of parser as AsyncIterable<{
    record: Record<string, string>;
    info: { lines: number };
  }>) {
    // Skipped rows are reported as the parser meets them, which can be ahead of the rows it yields.
    const before = skipped.filter((s) => s.line < info.lines);
    skipped.splice(0, before.length);
    yield* before;
    yield { line: info.lines, target: csvRowToTarget(record) };
  }
  yield* skipped.splice(0);
}

/** Records in a file, counted ahead for the progress bar's total and ETA (null for stdin). */
export async function countRecords(path: string | null, format: InputFormat): Promise<number | null> {
  if (!path) return null;
  let lines = 0;
  for await (const text of createInterface({ input: createReadStream(path), crlfDelay: Infinity }))
    if (text.trim() !== '') lines++;
  return format === 'csv' ? Math.max(0, lines - 1) : lines; // the header row
}
