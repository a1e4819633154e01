import { describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import { chunkMessageType } from '../../src/shared/inbound/chunk-message.js';
import type { InboundMessage, OutboundMessage } from '../../src/shared/kafka/bus.js';
import { envelope } from '../../src/shared/messages.js';
import { checkItemCount, decodeChunk, describeFailedChunk } from '../../src/workers/inbound/decode-chunk.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import { chunkMessage } from '../support/chunk-messages.js';
import { makeTargets } from '../support/targets.js';

const ids = { tenantId: crypto.randomUUID(), clientId: crypto.randomUUID(), requestId: 'r', correlationId: null };
const items = makeTargets(5, 'd').map((target, index) => ({ index, target }));
const identity = { importJobId: '7', sourceSystem: 'erp', chunkIndex: 0, chunkCount: 1 };
const asInbound = (m: OutboundMessage): InboundMessage =>
  ({
    topic: 't',
    partition: 0,
    offset: '0',
    key: null,
    value: Buffer.from(m.value),
    headers: m.headers,
  }) as InboundMessage;
const gatewayChunk = (chunkItems = items) =>
  asInbound(chunkMessages('7', 'erp', cutIntoChunks(chunkItems, 1 << 20), ids)[0]!);
/** A message with the gateway's headers and any value. */
const withValue = (value: string): InboundMessage => ({ ...gatewayChunk(), value: Buffer.from(value) });

describe('decodeChunk', () => {
  it("reads the gateway's chunk from its header line and hands on its rows as they are", () => {
    const message = gatewayChunk();
    const chunk = decodeChunk(message);
    expect(chunk.itemCount).toBe(5);
    expect(chunk.header).toMatchObject({ type: chunkMessageType, version: 2, ...ids });
    expect(chunk.header.payload).toEqual(identity);
    expect(chunk.rows.equals(message.value!.subarray(message.value!.indexOf('\n') + 1))).toBe(true);
    expect(() => checkItemCount(chunk, 4)).toThrow('chunk names 5 items but holds 4');
    expect(() => checkItemCount(chunk, 5)).not.toThrow();
  });

  it('refuses, as permanent, a chunk of another version (by its message-version header)', () => {
    const message = gatewayChunk();
    const v1 = { ...message, headers: { ...message.headers, 'message-version': '1' } };
    expect(() => decodeChunk(v1)).toThrow(PermanentMessageError);
    expect(() => decodeChunk(v1)).toThrow('chunk version 1 is not 2');
    const none = { ...message, headers: {} };
    expect(() => decodeChunk(none)).toThrow('chunk version (no message-version header) is not 2');
  });

  it('refuses, as permanent, a chunk whose header line is not one', () => {
    expect(() => decodeChunk(withValue('{"type":'))).toThrow('chunk has no header line');
    expect(() => decodeChunk(withValue('{"type":\n0\t1'))).toThrow('chunk header is not JSON');
    const version1 = JSON.stringify(envelope(chunkMessageType, 1, ids, { ...identity, itemCount: 1 }));
    expect(() => decodeChunk(withValue(`${version1}\n0\tx\n`))).toThrow(PermanentMessageError);
    const noCount = JSON.stringify(envelope(chunkMessageType, 2, ids, identity));
    expect(() => decodeChunk(withValue(`${noCount}\n0\tx\n`))).toThrow('chunk header does not match its schema');
    const other = JSON.stringify(envelope('something.else', 2, ids, { ...identity, itemCount: 1 }));
    expect(() => decodeChunk(withValue(`${other}\n0\tx\n`))).toThrow(PermanentMessageError);
  });
});

describe('describeFailedChunk', () => {
  it("names a dead-lettered chunk's job, item count and item range", () => {
    const later = items.map((item) => ({ ...item, index: item.index + 10 }));
    const expected = { itemCount: 5, firstIndex: 10, lastIndex: 14 };
    expect(describeFailedChunk(gatewayChunk(later))).toMatchObject({ header: { payload: identity }, ...expected });
    // The count its header names, even where the rows hold fewer.
    const miscounted = asInbound(chunkMessage(ids, identity, later.slice(0, 4), 5));
    expect(describeFailedChunk(miscounted)).toMatchObject({ itemCount: 5, firstIndex: 10, lastIndex: 13 });
  });

  it('is null when not even the header decodes', () => {
    expect(describeFailedChunk(withValue('not json'))).toBeNull();
    expect(describeFailedChunk(withValue('{"type":1}\n0\tx\n'))).toBeNull();
    expect(describeFailedChunk({ ...gatewayChunk(), headers: {} })).toBeNull();
  });
});
