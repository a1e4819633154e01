import { chunkMessageType, chunkRowsVersion } from '../../shared/inbound/chunk-message.js';
import type { TargetFields } from '../../shared/inbound/target-schema.js';
import type { OutboundMessage } from '../../shared/kafka/bus.js';
import { envelope } from '../../shared/messages.js';
import { targetRow } from './chunk-rows.js';

export type ChunkItem = { index: number; target: TargetFields };

/** A chunk's items as COPY text rows (UTF-8), and how many items that is. */
export type Chunk = { bytes: Uint8Array; items: number };

/**
 * Formats each accepted target as a row once and cuts the rows into chunks of at most maxBytes
 * (in item order), so no Kafka message nears the broker's size limit whatever the targets weigh.
 * A chunk made in a worker thread crosses to the event loop as bytes it can take over without
 * copying (prepare-batch-task.ts).
 */
export function cutIntoChunks(items: readonly ChunkItem[], maxBytes: number): Chunk[] {
  const chunks: Chunk[] = [];
  let current: string[] = [];
  let size = 0;
  for (const item of items) {
    const row = targetRow(item.index, item.target);
    const bytes = Buffer.byteLength(row);
    if (current.length > 0 && size + bytes > maxBytes) {
      chunks.push({ bytes: Buffer.from(current.join('')), items: current.length });
      current = [];
      size = 0;
    }
    current.push(row);
    size += bytes;
  }
  if (current.length > 0) chunks.push({ bytes: Buffer.from(current.join('')), items: current.length });
  return chunks;
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
      headers: { 'message-type': chunkMessageType, 'message-version': String(chunkRowsVersion) },
    };
  });
}
