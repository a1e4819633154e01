import { targetRow } from '../../src/gateway/inbound/chunk-rows.js';
import { chunkMessageType, chunkRowsVersion, type ChunkIdentity } from '../../src/shared/inbound/chunk-message.js';
import type { TargetFields } from '../../src/shared/inbound/target-schema.js';
import type { OutboundMessage } from '../../src/shared/kafka/bus.js';
import { envelope, messageHeaders } from '../../src/shared/messages.js';

export type ChunkIds = { tenantId: string; clientId: string; requestId: string | null; correlationId: null | string };

/**
 * One `inbound.targets.chunk` message as the gateway writes it, for a chunk a test makes up (a job
 * that does not exist, a poison target); `itemCount` overrides the count its header names.
 */
export function chunkMessage(
  ids: ChunkIds,
  identity: ChunkIdentity,
  items: { index: number; target: TargetFields }[],
  itemCount = items.length,
): OutboundMessage {
  const header = envelope(chunkMessageType, chunkRowsVersion, ids, { ...identity, itemCount });
  const rows = items.map((item) => targetRow(item.index, item.target)).join('');
  return {
    key: identity.importJobId,
    value: `${JSON.stringify(header)}\n${rows}`,
    headers: messageHeaders(chunkMessageType, chunkRowsVersion, ids.tenantId),
  };
}
