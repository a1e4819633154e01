import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError, errorCatalogue } from '../../src/shared/errors.js';
import { renderError, statusOfKind } from '../../src/gateway/http/error-mapping.js';
import { createBatchPreparer } from '../../src/gateway/inbound/batch-pool.js';
import { batchCorpus } from '../support/batch-corpus.js';

// The regression corpus of the batch parse path (issue 42): every body of test/support/batch-corpus.ts,
// valid and hostile, through the gateway's batch preparer (on the event loop when small, in a
// parse thread when large, as the route runs it), must get the answer recorded in
// prepare-batch-corpus.answers.json: the same status and error body (400, 413), or the same
// counts, per-target errors, fingerprint and COPY rows (200). The answers were recorded from the
// path before issue 42 changed it. RECORD_BATCH_CORPUS=1 records them again (review the diff).
const answersFile = new URL('./prepare-batch-corpus.answers.json', import.meta.url);
const limits = { maxTargets: 10_000, chunkMaxBytes: 512 * 1024 };
const preparer = createBatchPreparer(limits, 1, 16 * 1024 * 1024);
afterAll(() => preparer.close());

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function answer(body: Buffer) {
  try {
    const b = await preparer.prepare(body);
    return {
      status: 200,
      body: {
        sourceSystem: b.sourceSystem,
        externalBatchId: b.externalBatchId,
        received: b.received,
        accepted: b.accepted,
        rejected: b.rejectedCount,
        errors: b.errors,
        errorsOmitted: b.errorsOmitted,
      },
      requestHash: Buffer.from(b.requestHash).toString('hex'),
      // Small chunks as text, so a difference reads as one; large ones by their digest.
      chunks: b.chunks.map((c) =>
        c.bytes.length <= 4096
          ? { items: c.items, rows: Buffer.from(c.bytes).toString() }
          : { items: c.items, bytes: c.bytes.length, sha256: sha(c.bytes) },
      ),
    };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const body = renderError(err, 'standard', { requestId: 'r', correlationId: 'c' });
    return { status: statusOfKind[errorCatalogue[err.code].kind], body: JSON.parse(JSON.stringify(body)) as unknown };
  }
}

const corpus = batchCorpus(limits.maxTargets);
const recording = process.env.RECORD_BATCH_CORPUS === '1';
const recorded: Record<string, unknown> = recording ? {} : JSON.parse(readFileSync(answersFile, 'utf8'));

describe('the batch parse path answers its regression corpus as recorded', () => {
  it('has an answer recorded for every body, and a body for every answer', () => {
    expect(Object.keys(recorded).sort()).toEqual(recording ? [] : corpus.map((c) => c.name).sort());
    expect(new Set(corpus.map((c) => c.name)).size).toBe(corpus.length);
  });

  it.each(corpus)('$name', async ({ name, body }) => {
    const got = await answer(body);
    if (recording) recorded[name] = got;
    else expect(got).toEqual(recorded[name]);
  });

  it('covers 200 with errors, 400 and 413', () => {
    const statuses = Object.values(recorded).map((a) => (a as { status: number }).status);
    const withErrors = Object.values(recorded).filter(
      (a) => (a as { body: { errors?: unknown[] } }).body.errors?.length,
    );
    if (recording) writeFileSync(answersFile, `${JSON.stringify(recorded, null, 1)}\n`);
    expect(new Set(statuses)).toEqual(new Set([200, 400, 413]));
    expect(withErrors.length).toBeGreaterThan(5);
  });
});
