import { chunkMessageType, chunkRowsVersion } from '../../shared/inbound/chunk-message.js';
import type { TargetFields } from '../../shared/inbound/target-schema.js';
import type { OutboundMessage } from '../../shared/kafka/bus.js';
import { envelope, messageHeaders } from '../../shared/messages.js';
import { targetRow } from './chunk-rows.js';

export type ChunkItem = { index: number; target: TargetFields };

/** A chunk's items as COPY text rows (UTF-8), and how many items that is. */
export type Chunk = { bytes: Uint8Array; items: number };

/**
 * Formats each accepted target as a row once and cuts the rows into chunks of at most maxBytes
 * (in item order), so no Kafka message nears the broker's size limit whatever the targets weigh.
 * The rows are encoded to UTF-8 (encodeRows) and cut between rows in the bytes: a raw newline
 * only ever ends a row (COPY text escapes the others), so no row's length is measured on its own.
 * A chunk made in a worker thread crosses to the event loop as bytes it can take over without
 * copying (prepare-batch-task.ts).
 */
export function cutIntoChunks(items: readonly ChunkItem[], maxBytes: number): Chunk[] {
  const bytes = encodeRows(items);
  const chunks: Chunk[] = [];
  for (let start = 0; start < bytes.length;) {
    let end = bytes.length;
    if (end - start > maxBytes) {
      end = bytes.lastIndexOf(newline, start + maxBytes - 1) + 1;
      if (end <= start) end = bytes.indexOf(newline, start) + 1; // one row over the limit: a chunk of its own
    }
    chunks.push({ bytes: bytes.subarray(start, end), items: rowsIn(bytes, start, end) });
    start = end;
  }
  return chunks;
}

const newline = 0x0a;

/**
 * Rows encoded to UTF-8 a few dozen at a time, then joined: one string of every row was a rope of
 * tens of thousands of pieces that V8 flattened before encoding, about a sixth more CPU
 * (bench/prepare-batch.ts, "COPY rows + chunks").
 */
const rowsPerEncode = 64;
function encodeRows(items: readonly ChunkItem[]): Buffer {
  const parts: Buffer[] = [];
  let rows = '';
  for (let i = 0; i < items.length; i++) {
    rows += targetRow(items[i]!.index, items[i]!.target);
    if ((i + 1) % rowsPerEncode === 0) {
      parts.push(Buffer.from(rows));
      rows = '';
    }
  }
  if (rows) parts.push(Buffer.from(rows));
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** Rows (newlines) in bytes[start, end). */
function rowsIn(bytes: Buffer, start: number, end: number): number {
  let n = 0;
  for (let i = bytes.indexOf(newline, start); i !== -1 && i < end; i = bytes.indexOf(newline, i + 1)) n++;
  return n;
}

/**
 * The Kafka messages of one import job: one `inbound.targets.chunk` v2 per chunk (its header
 * line, then its rows), keyed by the job.
 */
export function chunkMessages(
  importJobId: string,
  sourceSystem: string,
  chunks: readonly Chunk[],
  meta: { tenantId: string; clientId: string; requestId: string | null; correlationId: string | null },
): OutboundMessage[] {
  return chunks.map((chunk, chunkIndex) => {
    const payload = { importJobId, sourceSystem, chunkIndex, chunkCount: chunks.length, itemCount: chunk.items };
    const header = JSON.stringify(envelope(chunkMessageType, chunkRowsVersion, meta, payload));
    return {
      key: importJobId,
      value: Buffer.concat([Buffer.from(`${header}\n`), chunk.bytes]),
      headers: messageHeaders(chunkMessageType, chunkRowsVersion, meta.tenantId),
    };
  });
}
