import { describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks, withItems } from '../../src/gateway/inbound/chunks.js';
import { chunkMessageType, chunkMessageVersion } from '../../src/shared/inbound/chunk-message.js';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { envelope } from '../../src/shared/messages.js';
import { checkItemCount, decodeChunk } from '../../src/workers/inbound/decode-chunk.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import { makeTargets } from '../support/targets.js';

const ids = { tenantId: crypto.randomUUID(), clientId: crypto.randomUUID(), requestId: 'r', correlationId: null };
const items = makeTargets(5, 'd').map((target, index) => ({ index, target }));
const message = (value: Buffer | string): InboundMessage =>
  ({ topic: 't', partition: 0, offset: '0', key: null, value: Buffer.from(value), headers: {} }) as InboundMessage;
const identity = { importJobId: '7', sourceSystem: 'erp', chunkIndex: 0, chunkCount: 1 };

describe('decodeChunk', () => {
  it("reads the gateway's chunk from the text before its items, without parsing them", () => {
    const [value] = chunkMessages('7', 'erp', cutIntoChunks(items, 1 << 20), ids).map((m) => m.value as Buffer);
    const chunk = decodeChunk(message(value!));
    expect(chunk.itemCount).toBe(5);
    expect(chunk.header).toMatchObject({ type: chunkMessageType, version: 1, ...ids, payload: identity });
    expect(chunk.header.payload).not.toHaveProperty('items');
    expect(chunk.header.payload).toEqual(identity); // the same header as a chunk decoded in full
    expect(chunk.value.equals(value!)).toBe(true);

    // Items that are not even JSON pass this read (PostgreSQL refuses them when it applies the chunk).
    const base = envelope(chunkMessageType, 1, ids, { ...identity, itemCount: 2, items: [] });
    expect(decodeChunk(message(withItems(base, Buffer.from('{]')))).itemCount).toBe(2);
  });

  it('decodes a chunk that names no item count (an earlier gateway) in full, counting its items', () => {
    const value = JSON.stringify(envelope(chunkMessageType, chunkMessageVersion, ids, { ...identity, items }));
    const chunk = decodeChunk(message(value));
    expect(chunk.itemCount).toBe(5);
    expect(chunk.header.payload).toEqual(identity);
  });

  it('decodes in full when "items" first appears elsewhere, and the result is the same', () => {
    const odd = { ...envelope(chunkMessageType, 1, ids, { ...identity, itemCount: 5, items }), x: { items: [1] } };
    const text = JSON.stringify(odd).replace('"payload"', '"x":{"items":[1]},"payload"');
    expect(text.indexOf('"items":[1]')).toBeLessThan(text.indexOf('"payload"'));
    const chunk = decodeChunk(message(text));
    expect(chunk.itemCount).toBe(5);
    expect(chunk.header.payload).toEqual(identity);
  });

  it('refuses, as permanent, a chunk whose items do not number what it names', () => {
    const value = JSON.stringify(envelope(chunkMessageType, 1, ids, { ...identity, itemCount: 4, items }));
    // A field after the items: the header read does not fit, so the chunk is read in full.
    const full = value.replace(/\}\}$/, ',"chunkCount":1}}');
    expect(() => decodeChunk(message(full))).toThrow(PermanentMessageError);
    expect(() => decodeChunk(message(full))).toThrow('chunk names 4 items but holds 5');

    const [ok] = chunkMessages('7', 'erp', cutIntoChunks(items, 1 << 20), ids).map((m) => m.value as Buffer);
    const chunk = decodeChunk(message(ok!));
    expect(() => checkItemCount(chunk, 4)).toThrow('chunk names 5 items but holds 4');
    expect(() => checkItemCount(chunk, 5)).not.toThrow();
  });

  it('refuses, as permanent, what is not a chunk at all', () => {
    expect(() => decodeChunk(message('not json'))).toThrow('message value is not JSON');
    const other = JSON.stringify(envelope('something.else', 1, ids, { ...identity, itemCount: 1, items: [] }));
    expect(() => decodeChunk(message(other))).toThrow(PermanentMessageError);
    // A chunk of no items passes the header read; the count PostgreSQL makes (0) refuses it.
    const empty = JSON.stringify(envelope(chunkMessageType, 1, ids, { ...identity, itemCount: 1, items: [] }));
    expect(() => checkItemCount(decodeChunk(message(empty)), 0)).toThrow(PermanentMessageError);
    const emptyOld = JSON.stringify(envelope(chunkMessageType, 1, ids, { ...identity, items: [] }));
    expect(() => decodeChunk(message(emptyOld))).toThrow(PermanentMessageError);
  });
});
