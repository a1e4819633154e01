import {
  chunkHeaderSchema,
  chunkMessageSchema,
  chunkRowsHeaderSchema,
  type ChunkPayload,
} from '../../shared/inbound/chunk-message.js';
import type { InboundMessage } from '../../shared/kafka/bus.js';
import type { Envelope } from '../../shared/messages.js';
import { decodeJson, decodeMessage } from '../decode.js';
import { PermanentMessageError } from '../permanent-error.js';

/** A chunk's envelope and identity, without its items. */
export type ChunkHeader = Envelope<Omit<ChunkPayload, 'items' | 'itemCount'>>;

/**
 * What applying a chunk needs: who and where, how many items, and the bytes PostgreSQL reads them
 * from: COPY text rows (v2), or the whole JSON message (v1).
 */
export type ChunkToApply = { header: ChunkHeader; itemCount: number } & (
  { format: 'rows'; rows: Buffer } | { format: 'json'; value: Buffer }
);

// A v1 chunk message is JSON.stringify(envelope) with `payload.items` last, and envelope fields
// never hold this text unescaped (a quote inside a JSON string is escaped).
const itemsKey = Buffer.from('"items":[');
const itemsEnd = Buffer.from(']}}');

/**
 * Decodes an `inbound.targets.chunk` message without parsing its items. A v2 message is a header
 * line, then the items as COPY rows (chunk-message.ts): only the header is parsed; PostgreSQL
 * reads the rows, and the worker refuses the chunk unless it read as many as the header names.
 * JSON never holds a raw newline, so a message with one is v2, and one without it v1.
 */
export function decodeChunk(message: InboundMessage): ChunkToApply {
  const value = message.value ?? Buffer.alloc(0);
  const newline = value.indexOf(10);
  return newline < 0 ? decodeJsonChunk(value, message) : decodeRowsChunk(value, newline);
}

function decodeRowsChunk(value: Buffer, newline: number): Extract<ChunkToApply, { format: 'rows' }> {
  const header = decodeJson(value.toString('utf8', 0, newline), chunkRowsHeaderSchema, 'chunk header');
  const { itemCount, ...identity } = header.payload;
  return { format: 'rows', header: { ...header, payload: identity }, itemCount, rows: value.subarray(newline + 1) };
}

/**
 * Decodes a v1 `inbound.targets.chunk` message (one JSON document), parsing its items only when
 * it must: PostgreSQL parses them anyway. So when the message names its item count, only the
 * text before `"items":[` is parsed (as that text plus `"items":[]}}`) and checked; the apply
 * statement then counts the items PostgreSQL read and refuses the chunk unless that count is the
 * one named. Anything else (from a gateway that did not name the count, or one the header read
 * does not fit) is decoded in full, so the same messages decode and the same ones are refused.
 */
function decodeJsonChunk(value: Buffer, message: InboundMessage): ChunkToApply {
  const read = readHeader(value);
  if (read) return { format: 'json', ...read, value };
  const chunk = decodeMessage(message, chunkMessageSchema);
  const { items, itemCount, ...identity } = chunk.payload;
  if (itemCount !== undefined && itemCount !== items.length)
    throw new PermanentMessageError(`chunk names ${itemCount} items but holds ${items.length}`);
  return { format: 'json', header: { ...chunk, payload: identity }, itemCount: items.length, value };
}

/** The chunk's identity and item count from the text before its items; null when that does not fit. */
function readHeader(value: Buffer): { header: ChunkHeader; itemCount: number } | null {
  const at = value.indexOf(itemsKey);
  if (at < 0 || !value.subarray(value.length - itemsEnd.length).equals(itemsEnd)) return null;
  let json: unknown;
  try {
    json = JSON.parse(`${value.toString('utf8', 0, at)}"items":[]}}`);
  } catch {
    return null;
  }
  const parsed = chunkHeaderSchema.safeParse(json);
  if (!parsed.success) return null;
  const { items: _spliced, itemCount, ...identity } = parsed.data.payload;
  return { header: { ...parsed.data, payload: identity }, itemCount };
}

/** The item count PostgreSQL reported for a chunk, checked against the count the chunk named. */
export function checkItemCount(chunk: ChunkToApply, counted: number): void {
  if (counted !== chunk.itemCount)
    throw new PermanentMessageError(`chunk names ${chunk.itemCount} items but holds ${counted}`);
}

/** What marking a dead-lettered chunk as failed needs: its job, item count and item range. */
export type FailedChunk = { header: ChunkHeader; itemCount: number; firstIndex: number; lastIndex: number };

/**
 * A dead-lettered chunk as far as it decodes: null when not even its identity does (nothing to
 * mark). A v2 chunk counts the items its header names, from the index of its first row to that of
 * its last (the first column of each row); a v1 chunk is decoded in full.
 */
export function describeFailedChunk(message: InboundMessage): FailedChunk | null {
  try {
    const value = message.value ?? Buffer.alloc(0);
    const newline = value.indexOf(10);
    if (newline < 0) {
      const { payload, ...envelope } = decodeMessage(message, chunkMessageSchema);
      const { items, itemCount: _named, ...identity } = payload;
      const [firstIndex, lastIndex] = [items[0]!.index, items.at(-1)!.index];
      return { header: { ...envelope, payload: identity }, itemCount: items.length, firstIndex, lastIndex };
    }
    const { header, itemCount, rows } = decodeRowsChunk(value, newline);
    const lastRow = rows.lastIndexOf(10, rows.length - 2) + 1;
    return { header, itemCount, firstIndex: rowIndex(rows, 0), lastIndex: rowIndex(rows, lastRow) };
  } catch {
    return null;
  }
}

/** The item index a row starts with (0 when it does not start with one). */
const rowIndex = (rows: Buffer, at: number): number => {
  const end = rows.indexOf(9, at);
  const index = Number(rows.toString('latin1', at, end < 0 ? at : end));
  return Number.isSafeInteger(index) ? index : 0;
};
