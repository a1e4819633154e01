import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createBatchPreparer } from '../../src/gateway/inbound/batch-pool.js';
import { bodyFingerprint } from '../../src/gateway/http/fingerprint.js';
import { makeTargets } from '../support/targets.js';

/** This process's threads: name and nice value, from /proc (Linux). */
const threads = () =>
  readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(fields[16]) };
  });

describe('bulk threads', () => {
  it.runIf(process.platform === 'linux')(
    'a batch parse thread is named batch-parse and yields the CPU to the event loop (nice 10)',
    async () => {
      expect(threads().filter((t) => t.name === 'batch-parse')).toEqual([]);
      const preparer = createBatchPreparer({ maxTargets: 10_000, chunkMaxBytes: 512 * 1024 }, 1, 16 * 1024 * 1024);
      try {
        const body = Buffer.from(JSON.stringify({ sourceSystem: 'erp', targets: makeTargets(400, 'b') }));
        expect(body.length).toBeGreaterThan(64 * 1024); // large enough to go to a thread
        const batch = await preparer.prepare(body);
        expect(batch.accepted).toBe(400);
        expect(threads().filter((t) => t.name === 'batch-parse')).toEqual([{ name: 'batch-parse', nice: 10 }]);
        expect(threads().find((t) => t.name !== 'batch-parse')?.nice).toBe(0); // the event loop keeps its own
      } finally {
        await preparer.close();
      }
    },
  );

  it('fingerprints a batch by its bytes, in a thread or not', async () => {
    const preparer = createBatchPreparer({ maxTargets: 10_000, chunkMaxBytes: 512 * 1024 }, 1, 16 * 1024 * 1024);
    try {
      for (const count of [400, 3]) {
        const value = { sourceSystem: 'erp', targets: makeTargets(count, 'fp') };
        const body = Buffer.from(JSON.stringify(value, null, 1));
        const fingerprint = bodyFingerprint(body);
        const batch = await preparer.prepare(body); // 400 targets go to the thread, 3 do not
        expect(batch.requestHash.equals(fingerprint)).toBe(true);
        expect(batch.requestHash.equals(bodyFingerprint(Buffer.from(JSON.stringify(value))))).toBe(false);
        // A body that owns its memory is handed over to the thread, not copied: none is left here.
        if (count === 400) expect(body.length).toBe(0);
      }
    } finally {
      await preparer.close();
    }
  });
});
