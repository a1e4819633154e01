// kafkajs computes the CRC32C of each record batch it produces in JavaScript, a byte at a time:
// about 1 ms of CPU per 1,000 inbound targets (380 KB of chunks), the largest single cost of the
// gateway's producer thread (docs/benchmarks.md, "kafkajs's CRC32C and buffers"). @node-rs/crc32 computes the same value
// natively, about twenty times faster. kafkajs has no option for it, so its CRC32C module is put
// into the CommonJS module cache before kafkajs loads it (with its encoder, at the first produce
// request); kafkajs.ts imports this before kafkajs, and src imports kafkajs's values from there.
// test/unit/kafkajs-crc32c.test.ts checks that the encoder gets it, with the same values.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** kafkajs's module, the one its record batch encoder requires. */
export const kafkajsCrc32cModule = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js');

/** The native CRC32C, or null where @node-rs/crc32 has no build for the platform (kafkajs keeps its own). */
function nativeCrc32c(): ((bytes: Buffer) => number) | null {
  try {
    const { crc32c } = require('@node-rs/crc32') as typeof import('@node-rs/crc32');
    return (bytes) => crc32c(bytes);
  } catch {
    return null;
  }
}

/** What kafkajs checksums with: null when kafkajs had loaded its own first or the platform has no build. */
export const installedCrc32c = require.cache[kafkajsCrc32cModule] ? null : nativeCrc32c();
if (installedCrc32c) {
  require.cache[kafkajsCrc32cModule] = {
    id: kafkajsCrc32cModule,
    filename: kafkajsCrc32cModule,
    loaded: true,
    exports: installedCrc32c,
    children: [],
    paths: [],
  } as unknown as NodeJS.Module;
}
