import { chunkRowsHeaderSchema, chunkRowsVersion, type ChunkIdentity } from '../../shared/inbound/chunk-message.js';
import type { InboundMessage } from '../../shared/kafka/bus.js';
import type { Envelope } from '../../shared/messages.js';
import { decodeJson } from '../decode.js';
import { PermanentMessageError } from '../permanent-error.js';

/** A chunk's envelope and identity, without its items. */
export type ChunkHeader = Envelope<ChunkIdentity>;

/** What applying a chunk needs: who and where, how many items, and its COPY text rows. */
export type ChunkToApply = { header: ChunkHeader; itemCount: number; rows: Buffer };

/**
 * Decodes an `inbound.targets.chunk` message without parsing its items (chunk-message.ts): only
 * the header line is parsed; PostgreSQL reads the rows, and the worker refuses the chunk unless it
 * read as many as the header names. A version other than the gateway's is refused as permanent.
 */
export function decodeChunk(message: InboundMessage): ChunkToApply {
  const version = message.headers['message-version'];
  if (version !== String(chunkRowsVersion))
    throw new PermanentMessageError(
      `chunk version ${version ?? '(no message-version header)'} is not ${chunkRowsVersion}`,
    );
  const value = message.value ?? Buffer.alloc(0);
  const newline = value.indexOf(10);
  if (newline < 0) throw new PermanentMessageError('chunk has no header line');
  const header = decodeJson(value.toString('utf8', 0, newline), chunkRowsHeaderSchema, 'chunk header');
  const { itemCount, ...identity } = header.payload;
  return { header: { ...header, payload: identity }, itemCount, rows: value.subarray(newline + 1) };
}

/** The item count PostgreSQL reported for a chunk, checked against the count the chunk named. */
export function checkItemCount(chunk: ChunkToApply, counted: number): void {
  if (counted !== chunk.itemCount)
    throw new PermanentMessageError(`chunk names ${chunk.itemCount} items but holds ${counted}`);
}

/** What marking a dead-lettered chunk as failed needs: its job, item count and item range. */
export type FailedChunk = { header: ChunkHeader; itemCount: number; firstIndex: number; lastIndex: number };

/**
 * A dead-lettered chunk as far as it decodes: null when not even its header does (nothing to
 * mark). It counts the items its header names, from the index of its first row to that of its
 * last (the first column of each row).
 */
export function describeFailedChunk(message: InboundMessage): FailedChunk | null {
  try {
    const { header, itemCount, rows } = decodeChunk(message);
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
