import { chunkMessageType, chunkMessageVersion, type ChunkPayload } from '../../shared/inbound/chunk-message.js';
import type { TargetFields } from '../../shared/inbound/target-schema.js';
import type { OutboundMessage } from '../../shared/kafka/bus.js';
import { envelope } from '../../shared/messages.js';

/** json, when known: JSON.stringify(target) already made (the target exactly as sent). */
export type ChunkItem = { index: number; target: TargetFields; json?: string };

/** A chunk's items as JSON texts joined by commas (UTF-8), and how many items that is. */
export type Chunk = { bytes: Uint8Array; items: number };

/**
 * Serialises each accepted target once and cuts the JSON texts into chunks of at most maxBytes
 * (in item order), so no Kafka message nears the broker's size limit whatever the targets weigh.
 * A chunk is the UTF-8 of its items' JSON texts joined by commas, spliced into its message as is
 * (withItems): each item is turned into JSON exactly once, and a chunk made in a worker thread
 * crosses to the event loop as bytes it can take over without copying (prepare-batch-task.ts).
 */
export function cutIntoChunks(items: readonly ChunkItem[], maxBytes: number): Chunk[] {
  const chunks: Chunk[] = [];
  let current: string[] = [];
  let size = 0;
  for (const item of items) {
    // The text JSON.stringify({ index, target }) gives, reusing the target's when it is known.
    const json =
      item.json !== undefined
        ? `{"index":${item.index},"target":${item.json}}`
        : JSON.stringify({ index: item.index, target: item.target });
    const bytes = Buffer.byteLength(json) + 1;
    if (current.length > 0 && size + bytes > maxBytes) {
      chunks.push({ bytes: Buffer.from(current.join(',')), items: current.length });
      current = [];
      size = 0;
    }
    current.push(json);
    size += bytes;
  }
  if (current.length > 0) chunks.push({ bytes: Buffer.from(current.join(',')), items: current.length });
  return chunks;
}

const itemsTail = '"items":[]}}';

/**
 * The message bytes of an envelope whose payload ends with `items`, with a chunk's item texts
 * spliced in (JSON.stringify puts `payload` last in the envelope and `items` last in it).
 */
export function withItems(envelopeWithEmptyItems: object, chunk: Uint8Array): Buffer {
  const text = JSON.stringify(envelopeWithEmptyItems);
  if (!text.endsWith(itemsTail)) throw new Error('envelope must end with payload.items');
  return Buffer.concat([Buffer.from(`${text.slice(0, -itemsTail.length)}"items":[`), chunk, Buffer.from(']}}')]);
}

/**
 * The Kafka messages of one import job: one `inbound.targets.chunk` v1 per chunk, keyed by the
 * job. Each names its item count (itemCount), so a worker can apply it without parsing its items.
 */
export function chunkMessages(
  importJobId: string,
  sourceSystem: string,
  chunks: readonly Chunk[],
  meta: { tenantId: string; clientId: string; requestId: string | null; correlationId: string | null },
): OutboundMessage[] {
  return chunks.map((chunk, chunkIndex) => {
    const payload: ChunkPayload = {
      importJobId,
      sourceSystem,
      chunkIndex,
      chunkCount: chunks.length,
      itemCount: chunk.items,
      items: [],
    };
    return {
      key: importJobId,
      value: withItems(envelope(chunkMessageType, chunkMessageVersion, meta, payload), chunk.bytes),
      headers: { 'message-type': chunkMessageType, 'message-version': String(chunkMessageVersion) },
    };
  });
}
