import { describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import { chunkMessageType, chunkMessageVersion } from '../../src/shared/inbound/chunk-message.js';
import type { InboundMessage } from '../../src/shared/kafka/bus.js';
import { envelope } from '../../src/shared/messages.js';
import { checkItemCount, decodeChunk, describeFailedChunk } from '../../src/workers/inbound/decode-chunk.js';
import { PermanentMessageError } from '../../src/workers/permanent-error.js';
import { v1ChunkValue } from '../support/chunk-messages.js';
import { makeTargets } from '../support/targets.js';

const ids = { tenantId: crypto.randomUUID(), clientId: crypto.randomUUID(), requestId: 'r', correlationId: null };
const items = makeTargets(5, 'd').map((target, index) => ({ index, target }));
const message = (value: Buffer | string): InboundMessage =>
  ({ topic: 't', partition: 0, offset: '0', key: null, value: Buffer.from(value), headers: {} }) as InboundMessage;
const identity = { importJobId: '7', sourceSystem: 'erp', chunkIndex: 0, chunkCount: 1 };

describe('decodeChunk', () => {
  it("reads the gateway's v2 chunk from its header line and hands on its rows as they are", () => {
    const [value] = chunkMessages('7', 'erp', cutIntoChunks(items, 1 << 20), ids).map((m) => m.value as Buffer);
    const chunk = decodeChunk(message(value!));
    expect(chunk).toMatchObject({ format: 'rows', itemCount: 5 });
    expect(chunk.header).toMatchObject({ type: chunkMessageType, version: 2, ...ids, payload: identity });
    expect(chunk.header.payload).toEqual(identity); // the same header as a v1 chunk's
    const rows = chunk.format === 'rows' ? chunk.rows : null;
    expect(rows?.equals(value!.subarray(value!.indexOf('\n') + 1))).toBe(true);
    expect(() => checkItemCount(chunk, 4)).toThrow('chunk names 5 items but holds 4');
  });

  it('refuses, as permanent, a v2 chunk whose header line is not one', () => {
    expect(() => decodeChunk(message('{"type":\n0\t1'))).toThrow('chunk header is not JSON');
    const v1Header = JSON.stringify(envelope(chunkMessageType, 1, ids, { ...identity, itemCount: 1 }));
    expect(() => decodeChunk(message(`${v1Header}\n0\tx\n`))).toThrow(PermanentMessageError);
    const noCount = JSON.stringify(envelope(chunkMessageType, 2, ids, identity));
    expect(() => decodeChunk(message(`${noCount}\n0\tx\n`))).toThrow('chunk header does not match its schema');
  });

  it('reads a v1 chunk from the text before its items, without parsing them', () => {
    const value = Buffer.from(v1ChunkValue(ids, identity, items, 5));
    const chunk = decodeChunk(message(value));
    expect(chunk).toMatchObject({ format: 'json', itemCount: 5 });
    expect(chunk.header).toMatchObject({ type: chunkMessageType, version: 1, ...ids, payload: identity });
    expect(chunk.header.payload).toEqual(identity); // the same header as a chunk decoded in full
    expect(chunk.format === 'json' && chunk.value.equals(value)).toBe(true);

    // Items that are not even JSON pass this read (PostgreSQL refuses them when it applies the chunk).
    const text = v1ChunkValue(ids, identity, [], 2).replace('"items":[]', '"items":[{]');
    expect(decodeChunk(message(text)).itemCount).toBe(2);
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

    const chunk = decodeChunk(message(v1ChunkValue(ids, identity, items, 5)));
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

describe('describeFailedChunk', () => {
  it("names a dead-lettered chunk's job, item count and item range, v2 and v1", () => {
    const later = items.map((item) => ({ ...item, index: item.index + 10 }));
    const [v2] = chunkMessages('7', 'erp', cutIntoChunks(later, 1 << 20), ids).map((m) => m.value as Buffer);
    const expected = { itemCount: 5, firstIndex: 10, lastIndex: 14 };
    expect(describeFailedChunk(message(v2!))).toMatchObject({ header: { payload: identity }, ...expected });
    expect(describeFailedChunk(message(v1ChunkValue(ids, identity, later, 4)))).toMatchObject(expected);
  });

  it('is null when not even the identity decodes', () => {
    expect(describeFailedChunk(message('not json'))).toBeNull();
    expect(describeFailedChunk(message('{"type":1}\n0\tx\n'))).toBeNull();
  });
});
