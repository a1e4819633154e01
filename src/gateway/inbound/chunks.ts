import type { TargetFields } from '../../shared/inbound/target-schema.js';

export type ChunkItems = { index: number; target: TargetFields }[];

/**
 * Cuts accepted targets into Kafka messages of at most maxBytes of items each (in item order),
 * so no message nears the broker's size limit whatever the targets weigh.
 */
export function cutIntoChunks(items: ChunkItems, maxBytes: number): ChunkItems[] {
  const chunks: ChunkItems[] = [];
  let current: ChunkItems = [];
  let size = 0;
  for (const item of items) {
    const bytes = Buffer.byteLength(JSON.stringify(item)) + 1;
    if (current.length > 0 && size + bytes > maxBytes) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
