import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { RejectLine } from './outcome.js';

/**
 * The rejects file: one JSON object per rejected target (input line, externalId, import job,
 * reasons, the target as read). Started afresh by each run: a rerun's replayed answers carry
 * the same errors, so the file again lists every reject of the whole input.
 */
export function openRejectsFile(path: string) {
  const out = createWriteStream(path, { flags: 'w' });
  let count = 0;
  return {
    async write(line: RejectLine) {
      count++;
      if (!out.write(`${JSON.stringify(line)}\n`)) await once(out, 'drain');
    },
    count: () => count,
    async close() {
      out.end();
      await once(out, 'finish');
    },
  };
}
