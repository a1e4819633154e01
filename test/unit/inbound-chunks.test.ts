import { describe, expect, it } from 'vitest';
import { chunkMessages, cutIntoChunks } from '../../src/gateway/inbound/chunks.js';
import { targetRow } from '../../src/gateway/inbound/chunk-rows.js';
import { chunkMessageType, chunkRowsHeaderSchema } from '../../src/shared/inbound/chunk-message.js';
import { makeTargets } from '../support/targets.js';

const items = makeTargets(300, 'u').map((target, index) => ({ index, target }));
const rowsOf = (bytes: Uint8Array) => Buffer.from(bytes).toString().split('\n').slice(0, -1);

describe('inbound chunks', () => {
  it('cuts rows in item order into chunks no larger than the limit, losing nothing', () => {
    const chunks = cutIntoChunks(items, 20_000);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.bytes.length).toBeLessThanOrEqual(20_000);
    const rows = chunks.map((c) => rowsOf(c.bytes));
    expect(rows.flat()).toEqual(items.map((i) => targetRow(i.index, i.target).slice(0, -1)));
    expect(chunks.map((c) => c.items)).toEqual(rows.map((r) => r.length));
  });

  it('fills a chunk to the byte (multi-byte text counted in bytes, not characters)', () => {
    const rowBytes = items.slice(0, 4).map((i) => Buffer.byteLength(targetRow(i.index, i.target)));
    expect(rowBytes[0]).toBeGreaterThan(targetRow(0, items[0]!.target).length); // ß is two bytes
    const exact = cutIntoChunks(items.slice(0, 4), rowBytes[0]! + rowBytes[1]!);
    expect(exact[0]!.items).toBe(2);
    expect(exact[0]!.bytes.length).toBe(rowBytes[0]! + rowBytes[1]!);
    const short = cutIntoChunks(items.slice(0, 4), rowBytes[0]! + rowBytes[1]! - 1);
    expect(short[0]!.items).toBe(1);
  });

  it('keeps an item larger than the limit as a chunk of its own', () => {
    const chunks = cutIntoChunks(items.slice(0, 3), 10);
    expect(chunks.map((c) => rowsOf(c.bytes).map((r) => r.split('\t')[0]))).toEqual([['0'], ['1'], ['2']]);
    expect(chunks.map((c) => c.items)).toEqual([1, 1, 1]);
  });

  it('writes v2 messages: a header line naming the chunk and its item count, then its rows', () => {
    const chunks = cutIntoChunks(items, 20_000);
    const ids = { tenantId: crypto.randomUUID(), clientId: crypto.randomUUID(), requestId: 'r', correlationId: 'c' };
    const messages = chunkMessages('7', 'erp', chunks, ids);
    expect(messages).toHaveLength(chunks.length);
    messages.forEach((m, i) => {
      const value = m.value as Buffer;
      const newline = value.indexOf('\n');
      const header = chunkRowsHeaderSchema.parse(JSON.parse(value.toString('utf8', 0, newline)));
      expect(header).toMatchObject({ type: chunkMessageType, version: 2, ...ids });
      expect(header.payload).toEqual({
        importJobId: '7',
        sourceSystem: 'erp',
        chunkIndex: i,
        chunkCount: chunks.length,
        itemCount: chunks[i]!.items,
      });
      expect(value.subarray(newline + 1).equals(Buffer.from(chunks[i]!.bytes))).toBe(true);
      expect(m).toMatchObject({ key: '7', headers: { 'message-type': chunkMessageType, 'message-version': '2' } });
    });
  });
});
