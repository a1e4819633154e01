// kafkajs's Encoder grows its buffer by doubling, each time with Buffer.alloc, which zero-fills it,
// and a produce request copies each message value through five encoders (record, record batch
// twice, request, size prefix): for a 380 KB chunk, megabytes of memset, about a quarter of the
// producer thread's CPU (docs/benchmarks.md, "kafkajs's CRC32C and buffers"). The encoder never hands out a
// byte it has not written: each write lands at `offset` after ensureAvailable, and `buffer` is
// the slice [0, offset). So its growth is allocated uninitialised: the same bytes out, no memset.
// test/unit/kafkajs-encoder.test.ts encodes produce requests on garbage-filled memory to prove it.
import { createRequire } from 'node:module';

type EncoderState = { buf: Buffer; offset: number };
type EncoderClass = {
  prototype: { ensureAvailable(this: EncoderState, length: number): void };
  nextPowerOfTwo(value: number): number;
};

const Encoder = createRequire(import.meta.url)('kafkajs/src/protocol/encoder.js') as EncoderClass;

Encoder.prototype.ensureAvailable = function (length) {
  if (this.offset + length <= this.buf.length) return;
  const grown = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(this.offset + length));
  this.buf.copy(grown, 0, 0, this.offset);
  this.buf = grown;
};
