import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

// In a process of its own, loaded as the service loads it (the bus first): in this test process,
// other files may have loaded kafkajs already.
const script = `
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
await import('./src/shared/kafka/bus.ts');
const require = createRequire(process.cwd() + '/');
const encoderModule = require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js');
require(encoderModule); // what kafkajs's first produce request loads
// Only now: had the bus not installed it, this would find kafkajs's own in the cache.
const { installedCrc32c, kafkajsCrc32cModule } = await import('./src/shared/kafka/kafkajs-crc32c.ts');
const encoder = require.cache[encoderModule];
const used = encoder.children.find((m) => m.id === kafkajsCrc32cModule).exports;
const own = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js');
const samples = [Buffer.alloc(0), Buffer.from('123456789'), randomBytes(1), randomBytes(70_001), randomBytes(1 << 20)];
console.log(JSON.stringify({
  native: installedCrc32c !== null && used === installedCrc32c,
  check: used(Buffer.from('123456789')),
  sameAsKafkajs: samples.map((b) => used(b) === own(b) >>> 0),
}));
`;

describe("kafkajs's CRC32C", () => {
  it('is the native one in the record batch encoder, with the values of kafkajs’s own', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).toEqual({ native: true, check: 0xe3069283, sameAsKafkajs: [true, true, true, true, true] });
  });
});
