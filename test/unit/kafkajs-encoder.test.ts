import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import '../../src/shared/kafka/kafkajs.js';

const require = createRequire(import.meta.url);
const produceRequest = require('kafkajs/src/protocol/requests/produce/v3/request.js');
const encodeRequest = require('kafkajs/src/protocol/request.js');

// A produce request as the gateway sends them: two partitions, chunk-sized and small values,
// multi-byte text, headers, explicit timestamps (so two encodings are comparable).
const messages = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    key: `job-${i}`,
    value: i % 2 ? randomBytes(1000 + i * 97_000) : `{"name":"Hauptstraße ${i} 🏠"}\n`.repeat(1 + i * 50),
    headers: { 'message-type': 'inbound.targets.chunk', tenant: `t-${i}` },
    timestamp: String(1_700_000_000_000 + i),
  }));
const topicData = [
  {
    topic: 'inbound',
    partitions: [
      { partition: 0, firstSequence: 0, messages: messages(5) },
      { partition: 3, firstSequence: 7, messages: messages(2) },
    ],
  },
];

async function encode(): Promise<Buffer> {
  const request = produceRequest({ acks: -1, timeout: 30_000, topicData });
  const encoder = await encodeRequest({ correlationId: 42, clientId: 'test', request });
  return Buffer.from(encoder.buffer);
}

afterEach(() => vi.restoreAllMocks());

describe("kafkajs's encoder, growing without zero-filling", () => {
  it('encodes the same bytes whatever the memory it grows into held', async () => {
    const clean = await encode();
    const allocUnsafe = Buffer.allocUnsafe.bind(Buffer);
    const grown = vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((size) => allocUnsafe(size).fill(0xa5));
    const onGarbage = await encode();
    expect(grown).toHaveBeenCalled(); // the growth went through the patched path
    expect(onGarbage.equals(clean)).toBe(true);
    expect(clean.readInt32BE(0)).toBe(clean.length - 4); // the size prefix covers every byte written
  });
});
