import { describe, expect, it } from 'vitest';
import { cutIntoChunks, withItems } from '../../src/gateway/inbound/chunks.js';
import { chunkMessageSchema, chunkMessageType } from '../../src/shared/inbound/chunk-message.js';
import { envelope } from '../../src/shared/messages.js';
import { makeTargets } from '../support/targets.js';

const items = makeTargets(300, 'u').map((target, index) => ({ index, target }));

describe('inbound chunks', () => {
  it('cuts in item order into chunks no larger than the limit, losing nothing', () => {
    const chunks = cutIntoChunks(items, 20_000);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.bytes.length).toBeLessThanOrEqual(20_000);
    const parsed = chunks.map((c) => JSON.parse(`[${Buffer.from(c.bytes).toString()}]`) as unknown[]);
    expect(parsed.flat()).toEqual(items);
    expect(chunks.map((c) => c.items)).toEqual(parsed.map((p) => p.length));
  });

  it('keeps an item larger than the limit as a chunk of its own', () => {
    const chunks = cutIntoChunks(items.slice(0, 3), 10);
    expect(chunks.map((c) => JSON.parse(`[${Buffer.from(c.bytes).toString()}]`))).toEqual(
      items.slice(0, 3).map((i) => [i]),
    );
    expect(chunks.map((c) => c.items)).toEqual([1, 1, 1]);
  });

  it('splices the item texts into the envelope as if the whole were serialised at once', () => {
    const [chunk] = cutIntoChunks(items.slice(0, 5), 1_000_000);
    const ids = { tenantId: crypto.randomUUID(), clientId: crypto.randomUUID(), requestId: 'r', correlationId: 'c' };
    const base = envelope(chunkMessageType, 1, ids, {
      importJobId: '7',
      sourceSystem: 'erp',
      chunkIndex: 0,
      chunkCount: 1,
      items: [] as unknown[],
    });
    const text = withItems(base, chunk!.bytes).toString();
    expect(JSON.parse(text)).toEqual({ ...base, payload: { ...base.payload, items: items.slice(0, 5) } });
    expect(chunkMessageSchema.safeParse(JSON.parse(text)).success).toBe(true);
  });
});
