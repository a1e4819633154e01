import { chunkMessageType, chunkMessageVersion } from '../../src/shared/inbound/chunk-message.js';
import type { TargetFields } from '../../src/shared/inbound/target-schema.js';
import { envelope } from '../../src/shared/messages.js';

export type ChunkIds = { tenantId: string; clientId: string; requestId: string | null; correlationId: null | string };
export type ChunkIdentity = { importJobId: string; sourceSystem: string; chunkIndex: number; chunkCount: number };

/**
 * An `inbound.targets.chunk` v1 message as gateways wrote it before v2 (one JSON document, items
 * last, itemCount when given): workers still apply such chunks left in a topic.
 */
export const v1ChunkValue = (
  ids: ChunkIds,
  identity: ChunkIdentity,
  items: { index: number; target: TargetFields | Record<string, unknown> }[],
  itemCount?: number,
): string => JSON.stringify(envelope(chunkMessageType, chunkMessageVersion, ids, { ...identity, itemCount, items }));

export const v1Headers = { 'message-type': chunkMessageType, 'message-version': String(chunkMessageVersion) };
