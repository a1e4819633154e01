import { chunkMessageType, chunkMessageVersion, type ChunkPayload } from '../../shared/inbound/chunk-message.js';
import type { TargetFields } from '../../shared/inbound/target-schema.js';
import type { OutboundMessage } from '../../shared/kafka/bus.js';
import { envelope } from '../../shared/messages.js';

export type ChunkItem = { index: number; target: TargetFields };

/**
 * Serialises each accepted target once and cuts the JSON texts into chunks of at most maxBytes
 * (in item order), so no Kafka message nears the broker's size limit whatever the targets weigh.
 * The texts are reused to build the messages: each item is turned into JSON exactly once.
 */
export function cutIntoChunks(items: readonly ChunkItem[], maxBytes: number): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const item of items) {
    const json = JSON.stringify(item);
    const bytes = Buffer.byteLength(json) + 1;
    if (current.length > 0 && size + bytes > maxBytes) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(json);
    size += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * The message text of an envelope whose payload ends with `items`, with the items' JSON texts
 * spliced in (JSON.stringify puts `payload` last in the envelope and `items` last in it).
 */
export function withItems(envelopeWithEmptyItems: object, itemJson: readonly string[]): string {
  const text = JSON.stringify(envelopeWithEmptyItems);
  const tail = '"items":[]}}';
  if (!text.endsWith(tail)) throw new Error('envelope must end with payload.items');
  return `${text.slice(0, -tail.length)}"items":[${itemJson.join(',')}]}}`;
}

/** The Kafka messages of one import job: one `inbound.targets.chunk` v1 per chunk, keyed by the job. */
export function chunkMessages(
  importJobId: string,
  sourceSystem: string,
  chunks: readonly string[][],
  meta: { tenantId: string; clientId: string; requestId: string | null; correlationId: string | null },
): OutboundMessage[] {
  return chunks.map((itemJson, chunkIndex) => {
    const payload: ChunkPayload = { importJobId, sourceSystem, chunkIndex, chunkCount: chunks.length, items: [] };
    return {
      key: importJobId,
      value: withItems(envelope(chunkMessageType, chunkMessageVersion, meta, payload), itemJson),
      headers: { 'message-type': chunkMessageType, 'message-version': String(chunkMessageVersion) },
    };
  });
}
