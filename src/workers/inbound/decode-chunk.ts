import { chunkHeaderSchema, chunkMessageSchema, type ChunkPayload } from '../../shared/inbound/chunk-message.js';
import type { InboundMessage } from '../../shared/kafka/bus.js';
import type { Envelope } from '../../shared/messages.js';
import { decodeMessage } from '../decode.js';
import { PermanentMessageError } from '../permanent-error.js';

/** A chunk's envelope and identity, without its items. */
export type ChunkHeader = Envelope<Omit<ChunkPayload, 'items' | 'itemCount'>>;

/** What applying a chunk needs: who and where, how many items, and the bytes PostgreSQL reads them from. */
export type ChunkToApply = { header: ChunkHeader; itemCount: number; value: Buffer };

// The gateway writes a chunk message as JSON.stringify(envelope) with `payload.items` last, and
// envelope fields never hold this text unescaped (a quote inside a JSON string is escaped).
const itemsKey = Buffer.from('"items":[');
const itemsEnd = Buffer.from(']}}');

/**
 * Decodes an `inbound.targets.chunk` message, parsing its items only when it must. Parsing and
 * checking a chunk's items was a third of the worker's CPU; PostgreSQL parses them anyway. So
 * when the message names its item count, only the text before `"items":[` is parsed (as that
 * text plus `"items":[]}}`) and checked; the apply statement then counts the items PostgreSQL
 * read and refuses the chunk unless that count is the one named. Anything else (a message from a
 * gateway that did not name the count, one the header read does not fit) is decoded in full as
 * before, so the same messages decode and the same ones are refused.
 */
export function decodeChunk(message: InboundMessage): ChunkToApply {
  const value = message.value ?? Buffer.alloc(0);
  const read = readHeader(value);
  if (read) return { ...read, value };
  const chunk = decodeMessage(message, chunkMessageSchema);
  const { items, itemCount, ...identity } = chunk.payload;
  if (itemCount !== undefined && itemCount !== items.length)
    throw new PermanentMessageError(`chunk names ${itemCount} items but holds ${items.length}`);
  return { header: { ...chunk, payload: identity }, itemCount: items.length, value };
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
